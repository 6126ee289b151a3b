-- am_merge: a merge is a linear pass (the old layout streamed in order,
-- merged with the sorted pending list, dealt out by levels).  It must write
-- the same layout pages, byte for byte (the page LSN and checksum aside), as
-- a fresh build of the same entries, with pending entries, tombstones and
-- duplicates, at edge sizes, for EBS and EKS fan-outs and 4- and 8-byte
-- keys; and answer like a sequential scan after many merges.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pageinspect;
\set ECHO none
\i test/sql/am_harness.inc
\set ECHO all
SELECT setseed(0.31);

-- the layout region of idx (keys_start and tids_start + ntidpages from the
-- metapage), as one md5
CREATE FUNCTION meta_u32(p bytea, off int) RETURNS int8 LANGUAGE sql AS $$
	SELECT get_byte(p, off) + get_byte(p, off + 1) * 256 + get_byte(p, off + 2) * 65536 +
		   get_byte(p, off + 3)::int8 * 16777216
$$;
CREATE FUNCTION region_digest(idx regclass) RETURNS text LANGUAGE sql AS $$
	WITH meta AS (
		SELECT meta_u32(p, 72) AS first, meta_u32(p, 80) + meta_u32(p, 84) - 1 AS last
		  FROM get_raw_page(idx::text, 0) p)
	SELECT md5(string_agg(md5(substr(get_raw_page(idx::text, b), 11)), '' ORDER BY b))
	  FROM meta, eytzgpu_info(idx) i, generate_series(meta.first, meta.last) b
	 WHERE i.entries > 0
$$;

-- tbl's index idx, after DML, merged; then built afresh on the same rows
-- with the same options: the same layout pages?
CREATE FUNCTION merge_vs_build(tbl text, col text, opts text) RETURNS TABLE (
	entries int8, dead_before int8, pending_before int8, identical bool, verified bool)
LANGUAGE plpgsql AS $$
DECLARE
	d int8;
	p int8;
BEGIN
	SELECT i.dead, i.pending INTO d, p FROM eytzgpu_info((tbl || '_m')::regclass) i;
	PERFORM eytzgpu_merge((tbl || '_m')::regclass);
	EXECUTE format('DROP INDEX IF EXISTS %I', tbl || '_b');
	EXECUTE format('CREATE INDEX %I ON %I USING eytzgpu (%I) WITH (%s)', tbl || '_b', tbl, col, opts);
	RETURN QUERY SELECT i.entries, d, p,
		region_digest((tbl || '_m')::regclass) IS NOT DISTINCT FROM region_digest((tbl || '_b')::regclass),
		eytzgpu_verify((tbl || '_m')::regclass) AND eytzgpu_verify((tbl || '_b')::regclass)
	  FROM eytzgpu_info((tbl || '_m')::regclass) i;
	EXECUTE format('DROP INDEX %I', tbl || '_b');
END
$$;

-- int8 with duplicates, NULLs and both extremes; EBS
CREATE TABLE m8 (k int8, v int4);
INSERT INTO m8 SELECT CASE WHEN g % 40 = 0 THEN NULL WHEN g % 5 = 0 THEN g % 50
			ELSE ((random() - 0.5) * 1e6)::int8 END, g
  FROM generate_series(1, 20000) g;
INSERT INTO m8 VALUES (9223372036854775807, -1), (-9223372036854775808, -2);
CREATE INDEX m8_m ON m8 USING eytzgpu (k) WITH (layout = ebs, pending_limit = 1000000);
-- tombstones (below VACUUM's merge threshold; INDEX_CLEANUP ON, as VACUUM may
-- skip the index for a few dead rows), then pending entries
DELETE FROM m8 WHERE v % 17 = 0;
VACUUM (INDEX_CLEANUP ON) m8;
INSERT INTO m8 SELECT CASE WHEN g % 3 = 0 THEN g % 50 ELSE ((random() - 0.5) * 1e6)::int8 END, g
  FROM generate_series(30001, 34000) g;
INSERT INTO m8 VALUES (9223372036854775807, -3), (-9223372036854775808, -4);
SELECT * FROM merge_vs_build('m8', 'k', 'layout = ebs, pending_limit = 1000000');
-- only pending entries (no tombstones), then only tombstones
INSERT INTO m8 SELECT g % 50, g FROM generate_series(40001, 41000) g;
SELECT * FROM merge_vs_build('m8', 'k', 'layout = ebs, pending_limit = 1000000');
DELETE FROM m8 WHERE v % 19 = 0;
VACUUM (INDEX_CLEANUP ON) m8;
SELECT * FROM merge_vs_build('m8', 'k', 'layout = ebs, pending_limit = 1000000');
SELECT * FROM am_check('m8_m', am_battery('m8_m', ARRAY['9223372036854775807', '0'], true));

-- int8, EKS fan-outs, and edge sizes: exactly full trees and one more
CREATE PROCEDURE resize_to(tbl text, n int8) LANGUAGE plpgsql AS $$
DECLARE
	have int8;
BEGIN
	EXECUTE format('SELECT count(k) FROM %I', tbl) INTO have;
	IF have > n THEN
		EXECUTE format('DELETE FROM %I WHERE v IN (SELECT v FROM %I WHERE k IS NOT NULL ORDER BY v DESC LIMIT %s)',
					   tbl, tbl, have - n);
	ELSE
		EXECUTE format('INSERT INTO %I SELECT g %% 1000, -g FROM generate_series(1, %s) g', tbl, n - have);
	END IF;
END
$$;
-- per size: the index's options, the rows, then merge and build
SELECT format('ALTER INDEX m8_m SET (%s)', opts),
	   format('CALL resize_to(%L, %s)', 'm8', n),
	   'VACUUM (INDEX_CLEANUP ON) m8',
	   format('SELECT %s AS target, * FROM merge_vs_build(%L, %L, %L)', n, 'm8', 'k',
			  opts || ', pending_limit = 1000000')
  FROM (VALUES (1, 6560, 'layout = eks, fanout = 9'), (2, 6561, 'layout = eks, fanout = 9'),
			   (3, 6559, 'layout = eks, fanout = 9'), (4, 8191, 'layout = ebs'),
			   (5, 8192, 'layout = ebs'), (6, 8192, 'layout = eks, fanout = 33'),
			   (7, 8192, 'layout = eks, fanout = 3'),
			   -- tiny: one entry, none, two
			   (8, 1, 'layout = eks, fanout = 3'), (9, 0, 'layout = eks, fanout = 3'),
			   (10, 2, 'layout = eks, fanout = 3')) v(step, n, opts)
 ORDER BY step \gexec

-- int4 (4-byte keys): an index filled by inserts only, EKS
CREATE TABLE m4 (k int4, v int4);
CREATE INDEX m4_m ON m4 USING eytzgpu (k) WITH (layout = eks, fanout = 5, pending_limit = 1000000);
INSERT INTO m4 SELECT CASE WHEN g % 25 = 0 THEN NULL WHEN g % 4 = 0 THEN g % 30
		ELSE (random() * 4294967295 - 2147483648)::int8::int4 END, g
  FROM generate_series(1, 15000) g;
INSERT INTO m4 VALUES (2147483647, -1), (-2147483648, -2), (2147483647, -3);
SELECT * FROM merge_vs_build('m4', 'k', 'layout = eks, fanout = 5, pending_limit = 1000000');
DELETE FROM m4 WHERE v % 13 = 0;
VACUUM (INDEX_CLEANUP ON) m4;
INSERT INTO m4 SELECT g % 30, g FROM generate_series(20001, 21000) g;
SELECT * FROM merge_vs_build('m4', 'k', 'layout = eks, fanout = 5, pending_limit = 1000000');

-- many automatic merges inside one transaction (no other reader: each
-- recycles the generation the last one retired), and across transactions,
-- with deletes in between: answers like a sequential scan
CREATE TABLE ma (k int4, v int4);
CREATE INDEX ma_i ON ma USING eytzgpu (k) WITH (pending_limit = 500);
INSERT INTO ma SELECT CASE WHEN g % 31 = 0 THEN NULL ELSE (g * 7919) % 3000 END, g
  FROM generate_series(1, 6000) g;
SELECT generation > 10 AS merged_often, pending < 500 AS pending_bounded,
	   pg_relation_size('ma_i') <= 20 * 8192 AS one_layout
  FROM eytzgpu_info('ma_i');
DO $$
BEGIN
	FOR r IN 1..8 LOOP
		DELETE FROM ma WHERE v % 23 = r;
		INSERT INTO ma SELECT (g::int8 * 104729) % 5000, g FROM generate_series(r * 10000, r * 10000 + 700) g;
		COMMIT;
	END LOOP;
END
$$;
-- tombstones (VACUUM with nothing pending, few deletes) and pending entries
VACUUM (INDEX_CLEANUP ON) ma;
SELECT eytzgpu_merge('ma_i') > 0 AS merged;
DELETE FROM ma WHERE v % 29 = 0;
VACUUM (INDEX_CLEANUP ON) ma;
INSERT INTO ma SELECT g % 100, g FROM generate_series(100001, 100300) g;
SELECT dead > 0 AS has_tombstones, pending > 0 AS has_pending FROM eytzgpu_info('ma_i');
SELECT * FROM am_check('ma_i', am_battery('ma_i', '{}', true));
SELECT eytzgpu_verify('ma_i');
-- pending_limit: unset, it follows the index (1/8 of its entries, here
-- 50000); set, it is kept, even when set to the automatic floor (16384)
CREATE TABLE pl (k int);
INSERT INTO pl SELECT g FROM generate_series(1, 400000) g;
CREATE INDEX pl_set ON pl USING eytzgpu (k) WITH (pending_limit = 16384);
CREATE INDEX pl_auto ON pl USING eytzgpu (k);
INSERT INTO pl SELECT g FROM generate_series(1, 20000) g;
INSERT INTO pl SELECT g FROM generate_series(1, 20000) g;
SELECT pending, generation FROM eytzgpu_info('pl_set');
SELECT pending, generation FROM eytzgpu_info('pl_auto');
SELECT count(*) FROM pl WHERE k BETWEEN 100 AND 20100;
SET enable_seqscan = off;
SELECT count(*) FROM pl WHERE k BETWEEN 100 AND 20100;
RESET enable_seqscan;
DROP TABLE pl;
