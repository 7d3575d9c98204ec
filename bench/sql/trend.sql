-- A series by day of docs/reporting.md (GET /v1/conversions/timeframes?interval=day) as convx
-- prints it with `trend -o json`: every day of the period, zeros where nothing converted, the
-- figures of the day's transactions over every source, the breakdown per order currency.

-- An average to 2 decimals, half away from zero, 0 for no orders (4.7): from whole cents.
CREATE OR REPLACE TEMP MACRO average(amount, n) AS
  CASE WHEN n = 0 THEN 0.0
       ELSE CAST(sign(amount) * ((2 * abs(CAST(amount * 100 AS HUGEINT)) + n) // (2 * n)) AS DOUBLE) / 100 END;

{{transactions}}
{{sums:day}},
days AS (SELECT CAST(unnest(range(DATE '{{from}}', DATE '{{to}}' + INTERVAL 1 DAY, INTERVAL 1 DAY)) AS DATE) AS day)
SELECT strftime(d.day, '%Y-%m-%d') AS "bucket",
       strftime(d.day, '%Y-%m-%dT%H:%M:%S.000Z') AS "start",
       strftime(d.day + INTERVAL 1 DAY, '%Y-%m-%dT%H:%M:%S.000Z') AS "end",
       strftime(c.first_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "firstConversionAt",
       strftime(c.last_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "lastConversionAt",
       CAST(coalesce(g.wo, 0) AS DOUBLE) AS "conversionsAmountWoTax", CAST(coalesce(g.w, 0) AS DOUBLE) AS "conversionsAmountWTax",
       CAST(coalesce(g.n, 0) AS INTEGER) AS "conversionsNumber", (SELECT currency FROM ref) AS "referenceCurrency",
       CAST(coalesce(c.uc, 0) AS INTEGER) AS "uniqueContacts",
       average(coalesce(g.w, 0), coalesce(g.n, 0)) AS "averageConversion", average(coalesce(g.w, 0), coalesce(c.uc, 0)) AS "averageUniqueConversion",
       CAST(coalesce(g.rwo, 0) AS DOUBLE) AS "refundsAmountWoTax", CAST(coalesce(g.rw, 0) AS DOUBLE) AS "refundsAmountWTax",
       CAST(coalesce(g.rn, 0) AS INTEGER) AS "refundsNumber",
       CAST(coalesce(g.wo + g.rwo, 0) AS DOUBLE) AS "grossConversionsAmountWoTax", CAST(coalesce(g.w + g.rw, 0) AS DOUBLE) AS "grossConversionsAmountWTax",
       CAST(coalesce(g.n + g.rn, 0) AS INTEGER) AS "grossConversionsNumber",
       coalesce(g.breakdown, []) AS "breakdown"
FROM days d
LEFT JOIN per_group g USING (day)
LEFT JOIN contacts_and_times c USING (day)
ORDER BY d.day
