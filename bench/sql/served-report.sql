-- The floor server's report of the period $1..$2 (the request's dateFrom and dateTo) from the
-- per-day sums (served.sql): the sums of the period's days per source and order currency, unique
-- contacts as the contacts whose previous day of the source lies before the period, the rows
-- in the default sort (-conversionsAmountWTax, name).
-- An average to 2 decimals, half away from zero, 0 for no orders (4.7): from whole cents, in
-- 64-bit integers below 10^11 (DuckDB divides HUGEINTs in software), as convx does.
CREATE OR REPLACE TEMP MACRO average(amount, n) AS
  CASE WHEN n = 0 THEN 0.0
       WHEN abs(amount) < 100000000000
         THEN CAST(sign(amount) * ((2 * CAST(abs(amount) * 100 AS BIGINT) + CAST(n AS BIGINT)) // (2 * CAST(n AS BIGINT))) AS DOUBLE) / 100
       ELSE CAST(sign(amount) * ((2 * abs(CAST(amount * 100 AS HUGEINT)) + n) // (2 * n)) AS DOUBLE) / 100 END;

WITH
per_currency AS (
  SELECT source_key, currency, sum(n) AS n, coalesce(sum(wo), 0) AS wo, coalesce(sum(w), 0) AS w,
         sum(rn) AS rn, coalesce(sum(rwo), 0) AS rwo, coalesce(sum(rw), 0) AS rw,
         coalesce(sum(ref_wo), 0) AS ref_wo, coalesce(sum(ref_w), 0) AS ref_w,
         coalesce(sum(ref_rwo), 0) AS ref_rwo, coalesce(sum(ref_rw), 0) AS ref_rw,
         min(first_at) AS first_at, max(last_at) AS last_at
  FROM report_day WHERE day BETWEEN CAST($1 AS DATE) AND CAST($2 AS DATE) GROUP BY ALL),
per_group AS (
  SELECT source_key, sum(n) AS n, sum(ref_wo) AS wo, sum(ref_w) AS w, sum(rn) AS rn, sum(ref_rwo) AS rwo, sum(ref_rw) AS rw,
         min(first_at) AS first_at, max(last_at) AS last_at,
         -- in currency order: structs sort by their first field (cheaper than an ordered aggregate)
         list_sort(list(struct_pack(
           currency := currency,
           conversionsAmountWoTax := CAST(wo AS DOUBLE), conversionsAmountWTax := CAST(w AS DOUBLE),
           conversionsNumber := CAST(n AS INTEGER), averageConversion := average(w, n),
           refundsAmountWoTax := CAST(rwo AS DOUBLE), refundsAmountWTax := CAST(rw AS DOUBLE), refundsNumber := CAST(rn AS INTEGER),
           grossConversionsAmountWoTax := CAST(wo + rwo AS DOUBLE), grossConversionsAmountWTax := CAST(w + rw AS DOUBLE),
           grossConversionsNumber := CAST(n + rn AS INTEGER),
           conversionAmountWoTaxReference := CAST(ref_wo AS DOUBLE), conversionAmountWTaxReference := CAST(ref_w AS DOUBLE)
         ))) AS breakdown
  FROM per_currency GROUP BY source_key),
contacts AS (
  SELECT source_key, count(*) AS uc FROM contact_day
  WHERE day BETWEEN CAST($1 AS DATE) AND CAST($2 AS DATE) AND coalesce(prev_day, DATE '0001-01-01') < CAST($1 AS DATE)
  GROUP BY source_key)
SELECT i.source_id AS "id", i.name AS "name",
       struct_pack(type := i.source_type, id := i.source_id, name := i.name, campaignId := i.campaign_id,
                   smartflowId := i.smartflow_id, smartflowName := i.smartflow_name,
                   deliveryId := i.delivery_id, deliveryName := i.delivery_name,
                   detailUrl := CASE WHEN i.source_type = 'smartflow'
                     THEN '/v1/deliveries/' || url_encode(i.smartflow_id) || coalesce('/' || url_encode(i.delivery_id), '') || '/conversions'
                     ELSE '/v1/campaigns/' || url_encode(i.campaign_id) || '/conversions' END
                     || '?sourceType=' || url_encode(i.source_type) || '&sourceId=' || url_encode(i.source_id)
                     || '&dateFrom=' || $1 || '&dateTo=' || $2) AS "source",
       strftime(i.started_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "sourceStartedAt",
       strftime(g.first_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "firstConversionAt",
       strftime(g.last_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "lastConversionAt",
       CAST(g.wo AS DOUBLE) AS "conversionsAmountWoTax", CAST(g.w AS DOUBLE) AS "conversionsAmountWTax",
       CAST(g.n AS INTEGER) AS "conversionsNumber", (SELECT currency FROM ref) AS "referenceCurrency",
       CAST(coalesce(c.uc, 0) AS INTEGER) AS "uniqueContacts",
       average(g.w, g.n) AS "averageConversion", average(g.w, coalesce(c.uc, 0)) AS "averageUniqueConversion",
       CAST(g.rwo AS DOUBLE) AS "refundsAmountWoTax", CAST(g.rw AS DOUBLE) AS "refundsAmountWTax", CAST(g.rn AS INTEGER) AS "refundsNumber",
       CAST(g.wo + g.rwo AS DOUBLE) AS "grossConversionsAmountWoTax", CAST(g.w + g.rw AS DOUBLE) AS "grossConversionsAmountWTax",
       CAST(g.n + g.rn AS INTEGER) AS "grossConversionsNumber",
       g.breakdown AS "breakdown"
FROM per_group g
LEFT JOIN contacts c USING (source_key)
JOIN info i USING (source_key)
ORDER BY g.w DESC, i.name, i.source_type, i.source_id
