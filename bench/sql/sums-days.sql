-- The sums of sums.sql per {{key}} (a day), read from an imported file's per-day sums instead of
-- its transactions: scope_0.report_day (each day, source and order currency: counts, exact sums,
-- first and last conversion) and the contacts who converted each day through any source
-- (scope_0.plugin_day.uc). trend.sql puts it in its WITH list.
per_currency AS (
  SELECT day AS {{key}}, currency,
         sum(n) AS n, coalesce(sum(wo), 0) AS wo, coalesce(sum(w), 0) AS w,
         sum(rn) AS rn, coalesce(sum(rwo), 0) AS rwo, coalesce(sum(rw), 0) AS rw,
         coalesce(sum(ref_wo), 0) AS ref_wo, coalesce(sum(ref_w), 0) AS ref_w,
         coalesce(sum(ref_rwo), 0) AS ref_rwo, coalesce(sum(ref_rw), 0) AS ref_rw,
         min(first_at) AS first_at, max(last_at) AS last_at
  FROM imported.scope_0.report_day WHERE day BETWEEN DATE '{{from}}' AND DATE '{{to}}' GROUP BY ALL),
per_group AS (
  SELECT {{key}},
         sum(n) AS n, sum(ref_wo) AS wo, sum(ref_w) AS w, sum(rn) AS rn, sum(ref_rwo) AS rwo, sum(ref_rw) AS rw,
         min(first_at) AS first_at, max(last_at) AS last_at,
         list(struct_pack(
           currency := currency,
           conversionsAmountWoTax := CAST(wo AS DOUBLE), conversionsAmountWTax := CAST(w AS DOUBLE),
           conversionsNumber := CAST(n AS INTEGER), averageConversion := average(w, n),
           refundsAmountWoTax := CAST(rwo AS DOUBLE), refundsAmountWTax := CAST(rw AS DOUBLE), refundsNumber := CAST(rn AS INTEGER),
           grossConversionsAmountWoTax := CAST(wo + rwo AS DOUBLE), grossConversionsAmountWTax := CAST(w + rw AS DOUBLE),
           grossConversionsNumber := CAST(n + rn AS INTEGER),
           conversionAmountWoTaxReference := CAST(ref_wo AS DOUBLE), conversionAmountWTaxReference := CAST(ref_w AS DOUBLE)
         ) ORDER BY currency) AS breakdown
  FROM per_currency GROUP BY ALL),
contacts AS (
  SELECT day AS {{key}}, uc FROM imported.scope_0.plugin_day WHERE day BETWEEN DATE '{{from}}' AND DATE '{{to}}'),
contacts_and_times AS (
  SELECT g.{{key}}, coalesce(u.uc, 0) AS uc, g.first_at, g.last_at FROM per_group g LEFT JOIN contacts u USING ({{key}}))
