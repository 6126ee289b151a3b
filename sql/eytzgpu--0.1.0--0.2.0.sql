/* eytzgpu--0.1.0--0.2.0.sql: from 0.1.0 to 0.2.0 (ALTER EXTENSION eytzgpu UPDATE) */

\echo Use "ALTER EXTENSION eytzgpu UPDATE TO '0.2.0'" to load this file. \quit
