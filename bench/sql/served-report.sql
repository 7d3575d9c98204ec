-- The floor server's report of the period $1..$2 (the request's dateFrom and dateTo) from the
-- per-day sums (served.sql), keyed as sums.sql keys them: per_currency (the sums of the period's
-- days per source and order currency) and contacts_and_times (unique contacts as the contacts
-- whose previous day of the source lies before the period, first and last conversion). bench/bare.js
-- puts in per_group of sums.sql (its breakdown sorted by list_sort, cheaper than an ordered
-- aggregate) and the rows of report.sql, the period's dates in its detailUrl as parameters.

-- An average to 2 decimals, half away from zero, 0 for no orders (4.7): from whole cents, in
-- 64-bit integers below 10^11 (DuckDB divides HUGEINTs in software), as convx does.
CREATE OR REPLACE TEMP MACRO average(amount, n) AS
  CASE WHEN n = 0 THEN 0.0
       WHEN abs(amount) < 100000000000
         THEN CAST(sign(amount) * ((2 * CAST(abs(amount) * 100 AS BIGINT) + CAST(n AS BIGINT)) // (2 * CAST(n AS BIGINT))) AS DOUBLE) / 100
       ELSE CAST(sign(amount) * ((2 * abs(CAST(amount * 100 AS HUGEINT)) + n) // (2 * n)) AS DOUBLE) / 100 END;

WITH
days AS (SELECT * FROM report_day WHERE day BETWEEN CAST($1 AS DATE) AND CAST($2 AS DATE)),
per_currency AS (
  SELECT i.source_type, i.source_id, d.currency, sum(d.n) AS n, coalesce(sum(d.wo), 0) AS wo, coalesce(sum(d.w), 0) AS w,
         sum(d.rn) AS rn, coalesce(sum(d.rwo), 0) AS rwo, coalesce(sum(d.rw), 0) AS rw,
         coalesce(sum(d.ref_wo), 0) AS ref_wo, coalesce(sum(d.ref_w), 0) AS ref_w,
         coalesce(sum(d.ref_rwo), 0) AS ref_rwo, coalesce(sum(d.ref_rw), 0) AS ref_rw
  FROM days d JOIN info i USING (source_key) GROUP BY ALL),
contacts_and_times AS (
  SELECT i.source_type, i.source_id, coalesce(u.uc, 0) AS uc, t.first_at, t.last_at
  FROM (SELECT source_key, min(first_at) AS first_at, max(last_at) AS last_at FROM days GROUP BY source_key) t
  JOIN info i USING (source_key)
  LEFT JOIN (
    SELECT source_key, count(*) AS uc FROM contact_day
    WHERE day BETWEEN CAST($1 AS DATE) AND CAST($2 AS DATE) AND coalesce(prev_day, DATE '0001-01-01') < CAST($1 AS DATE)
    GROUP BY source_key) u USING (source_key)),
