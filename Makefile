# Makefile for eytzgpu (PGXS).
#
#   make [PG_CONFIG=/path/to/pg_config] [NO_CUDA=1] [CUDA_HOME=/usr/local/cuda]
#        [SANITIZE=undefined]    C sources built with gcc's sanitizers (scripts/sanitize_check.sh)
#   make install
#   make installcheck          pg_regress (test/sql, test/expected) against the server
#                              that PGHOST/PGPORT point at
#   make prove_installcheck    the TAP tests (test/t), each on a cluster of its own
#
# The C sources always build.  When nvcc is found (CUDA_HOME, default
# /usr/local/cuda) and NO_CUDA is unset, the kernels in cuda/*.cu are compiled
# and linked in with the static CUDA runtime, so eytzgpu.so still loads on a
# machine with no NVIDIA driver; the GPU is detected at run time.  Switching
# between the two (or changing PG_CONFIG or CUDA_HOME) rebuilds what depends
# on it: .build-config and .build-config-cuda record the configuration.

EXTENSION = eytzgpu
EXTVERSION = 0.3.0
MODULE_big = eytzgpu
DATA = $(wildcard eytzgpu--*.sql)
PGFILEDESC = "eytzgpu - static Eytzinger index on the GPU"

# src/<subsystem>/*.c (docs/development.md: the table of files)
SRC_DIRS = $(sort $(dir $(wildcard src/*/*.c)))
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*/*.c)))

REGRESS = $(patsubst test/sql/%.sql,%,$(sort $(wildcard test/sql/*.sql)))
REGRESS_OPTS = --inputdir=test --load-extension=$(EXTENSION)

PG_CONFIG ?= pg_config
PG_CPPFLAGS += -Icuda -Isrc $(addprefix -I,$(SRC_DIRS)) -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare

ifdef SANITIZE
PG_CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer
SHLIB_LINK += -fsanitize=$(SANITIZE)
endif

CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(CUDA_HOME)/bin/nvcc
ifeq ($(NO_CUDA),)
ifneq ($(wildcard $(NVCC)),)
HAVE_CUDA = 1
endif
endif

ifdef HAVE_CUDA
CUDA_SRCS = $(sort $(wildcard cuda/*.cu))
CUDA_OBJS = $(CUDA_SRCS:.cu=.o)
# Hopper first; sm_80 and PTX keep older and newer cards working.
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 \
	-gencode arch=compute_90,code=compute_90
NVCCFLAGS ?= -O3 -std=c++17 $(CUDA_ARCH) -Xcompiler -fPIC,-Wall --cudart static -Icuda
PG_CPPFLAGS += -DEYTZ_HAVE_CUDA
# CUDA objects stay out of OBJS: PGXS would want LLVM bitcode for them.
SHLIB_LINK += $(CUDA_OBJS) -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -ldl -lpthread -lstdc++
EXTRA_CLEAN += $(CUDA_OBJS)
endif

EXTRA_CLEAN += test/layout_test .build-config .build-config-cuda tmp_check

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

ifdef HAVE_CUDA
$(shlib): $(CUDA_OBJS)

cuda/%.o: cuda/%.cu $(wildcard cuda/*.h cuda/*.cuh)
	@echo "== nvcc: compiling $< (the CUDA kernels, for several GPU generations: a few minutes)"
	$(NVCC) $(NVCCFLAGS) -c $< -o $@
	@echo "== nvcc: $@ done"
endif

$(OBJS): $(wildcard src/*.h src/*/*.h cuda/*.h)

# Rewritten only when the configuration changes, so that make rebuilds then:
# the C objects depend on the PostgreSQL and on whether CUDA is in, the
# kernels on nvcc and its flags only (switching NO_CUDA back keeps them)
BUILD_CONFIG = pg_config=$(PG_CONFIG) cuda=$(if $(HAVE_CUDA),yes,no) sanitize=$(SANITIZE)
CUDA_CONFIG = $(NVCC) $(NVCCFLAGS)
.build-config: STAMP = $(BUILD_CONFIG)
.build-config-cuda: STAMP = $(CUDA_CONFIG)
.build-config .build-config-cuda: FORCE
	@echo '$(STAMP)' | cmp -s - $@ || echo '$(STAMP)' > $@
$(OBJS) $(OBJS:.o=.bc): .build-config
$(CUDA_OBJS): .build-config-cuda
.PHONY: FORCE
FORCE:

# TAP tests, apart from installcheck as in PostgreSQL's own tree (they start
# clusters of their own, so they cannot run as root)
.PHONY: prove_installcheck
prove_installcheck: PROVE_TESTS ?= test/t/*.pl
prove_installcheck:
	$(prove_installcheck)

# CPU check of the layout math shared with the kernels (no server needed).
test/layout_test: test/layout_test.c cuda/eytz_layout.h
	$(CC) -O2 -Wall -Wextra -Icuda $< -o $@

.PHONY: layoutcheck
layoutcheck: test/layout_test
	./test/layout_test

# README.md's SQL blocks are all in test/sql/readme.sql, which runs them
.PHONY: readmecheck
readmecheck:
	perl scripts/readme_check.pl README.md $(wildcard docs/*.md) test/sql/readme.sql
