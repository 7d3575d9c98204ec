-- The reference currency of an imported .duckdb file (convx data import), for a case that reads
-- its per-day sums (sums-days.sql) instead of its attributed transactions (imported.sql).
WITH
ref AS (SELECT any_value(reference_currency) AS currency FROM imported.main.t_plugins),
