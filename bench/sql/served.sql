-- The floor server's tables (node bench/bare.js serve): an imported .duckdb file (convx data
-- import) attached read-only; its per-day sums and sources copied into memory once at start (the
-- fastest way for SQL to read them); the attributed transactions (conv, with its index on order_id) read in place.
CREATE TABLE report_day AS SELECT * FROM imported.scope_0.report_day;
CREATE TABLE contact_day AS SELECT * FROM imported.scope_0.contact_day;
CREATE TABLE info AS SELECT * FROM imported.scope_0.source_info;
CREATE TABLE ref AS SELECT any_value(reference_currency) AS currency FROM imported.main.t_plugins
