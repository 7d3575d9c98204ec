-- The attributed transactions of docs/reporting.md in the period {{from}}..{{to}},
-- written by hand with DuckDB alone: the bare counterpart that convx is measured
-- against (bench/run.js). report.sql and items.sql continue this WITH list.
--
-- What convx does on top of this, and this query does not:
--  * it checks every value of every table against its column type (dates, amounts
--    with at most 4 decimals, booleans, known source types) and reports bad ones
--    with file and line, and it looks for negative order amounts (a finding);
--  * it resolves the reference currency by the rules of the README's Datasets section (here: the
--    single plugins.reference_currency, as the generated data and the samples have);
--  * it runs a separate query that fails with a data error when a transaction has
--    no usable FX rate (here such a transaction would silently count as NULL);
--  * a duplicated order row at the very same instant as its order's first row is
--    told apart by file position in convx (here both would count; the data has none).
WITH
ref AS (SELECT any_value(reference_currency) AS currency FROM {{plugins}}),
-- Orders and refunds of the period with net revenue (4.1, 4.2, 4.4).
tx AS (
  SELECT order_id, contact_id, datetime, CAST(datetime AS DATE) AS day, currency, country,
         coalesce(is_refund, false) AS is_refund,
         CAST(amount_wo_tax AS DECIMAL(18,4)) AS amount_wo_tax, CAST(amount_w_tax AS DECIMAL(18,4)) AS amount_w_tax
  FROM {{orders}}
  WHERE datetime >= DATE '{{from}}' AND datetime < DATE '{{to}}' + INTERVAL 1 DAY
    AND amount_wo_tax <> 0),
-- The row that counts for each of their orders: the earliest order row (4.5); a
-- refund's order may lie before the period.
heads AS (
  SELECT order_id, contact_id, datetime, amount_wo_tax, status
  FROM {{orders}}
  WHERE NOT coalesce(is_refund, false) AND order_id IN (SELECT order_id FROM tx)
  QUALIFY row_number() OVER (PARTITION BY order_id ORDER BY datetime) = 1),
-- Conversions: orders not cancelled (4.3), with net revenue (4.4), attributed to the
-- contact's last click in the 30 days up to the order; of clicks at the same instant
-- the greatest (source_type, source_id) wins (4.5): max() of the struct does both.
conversions AS (
  SELECT h.order_id, h.datetime AS order_datetime,
         max(struct_pack(d := c.datetime, t := c.source_type, i := c.source_id)) AS click
  FROM heads h
  JOIN {{touches}} c
    ON c.contact_id = h.contact_id AND c.datetime <= h.datetime AND c.datetime >= h.datetime - INTERVAL 30 DAY
  WHERE lower(trim(c.touch)) = 'click'
    AND h.amount_wo_tax <> 0
    AND lower(trim(coalesce(h.status, ''))) NOT IN ('cancelled', 'canceled', 'storno', 'void', 'voided')
  GROUP BY h.order_id, h.datetime),
-- Each transaction of a conversion: the order's own (first) row and its refunds, refunds negative (4.2).
attributed AS (
  SELECT tx.order_id, tx.contact_id, tx.datetime, tx.day, tx.currency, tx.country, tx.is_refund,
         CASE WHEN tx.is_refund THEN -abs(tx.amount_wo_tax) ELSE tx.amount_wo_tax END AS amount_wo_tax,
         CASE WHEN tx.is_refund THEN -abs(tx.amount_w_tax) ELSE tx.amount_w_tax END AS amount_w_tax,
         a.order_datetime, a.click.d AS touch_datetime, a.click.t AS source_type, a.click.i AS source_id
  FROM tx JOIN conversions a USING (order_id)
  WHERE tx.is_refund OR tx.datetime = a.order_datetime),
-- FX (4.6): the rate of the transaction's UTC day, else the latest earlier one at most
-- 7 days back; the reference currency at 1; rounded half away from zero per transaction
-- (exact: DECIMAL(18,4) x DECIMAL(18,10) is DECIMAL(18,14) in DuckDB, which overflows from
-- 10,000 on, so the amount is widened to DECIMAL(38,4) first).
priced AS (
  SELECT t.*,
         CAST(round(CAST(t.amount_wo_tax AS DECIMAL(38,4)) * t.rate, 2) AS DECIMAL(18,2)) AS ref_wo,
         CAST(round(CAST(t.amount_w_tax AS DECIMAL(38,4)) * t.rate, 2) AS DECIMAL(18,2)) AS ref_w
  FROM (
    SELECT t.*, CASE WHEN t.currency = (SELECT currency FROM ref) THEN CAST(1 AS DECIMAL(18,10))
                     WHEN fx.date >= t.day - INTERVAL 7 DAY THEN CAST(fx.rate AS DECIMAL(18,10)) END AS rate
    FROM attributed t ASOF LEFT JOIN {{fx}} fx ON fx.currency = t.currency AND t.day >= fx.date) t),
-- The identity of each source that has conversions (4.10): names, campaign and smartflow
-- ids with their fallbacks, and when it started: sources.started_at, else its first touch.
used AS (SELECT DISTINCT source_type, source_id FROM priced),
src AS (
  SELECT * FROM {{sources}}
  QUALIFY row_number() OVER (PARTITION BY source_type, source_id) = 1),
first_touch AS (
  SELECT t.source_type, t.source_id, min(t.datetime) AS at
  FROM {{touches}} t
  WHERE (t.source_type, t.source_id) IN (
    SELECT (u.source_type, u.source_id) FROM used u LEFT JOIN src s USING (source_type, source_id) WHERE s.started_at IS NULL)
  GROUP BY ALL),
info AS (
  SELECT u.source_type, u.source_id,
         coalesce(s.name, u.source_id) AS name,
         CASE WHEN u.source_type = 'smartflow' THEN coalesce(s.smartflow_id, u.source_id) END AS smartflow_id,
         coalesce(s.campaign_id, CASE WHEN u.source_type = 'smartflow' THEN coalesce(s.smartflow_id, u.source_id) ELSE u.source_id END) AS campaign_id,
         CASE WHEN u.source_type = 'smartflow' THEN coalesce(s.smartflow_name, s.smartflow_id, u.source_id) END AS smartflow_name,
         s.delivery_id,
         CASE WHEN s.delivery_id IS NOT NULL THEN coalesce(s.delivery_name, s.delivery_id) END AS delivery_name,
         coalesce(s.started_at, f.at) AS started_at
  FROM used u
  LEFT JOIN src s USING (source_type, source_id)
  LEFT JOIN first_touch f USING (source_type, source_id)),
