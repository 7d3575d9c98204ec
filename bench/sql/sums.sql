-- The sums of a report (docs/reporting.md 4.7) per {{key}}: per_currency (counts and exact sums per
-- order currency), per_group (in the reference currency, with the breakdown per order currency) and
-- contacts_and_times (unique contacts, first and last conversion). report.sql and trend.sql
-- put it in their WITH list with their key.
per_currency AS (
  SELECT {{key}}, currency,
         count(*) FILTER (WHERE NOT is_refund) AS n,
         coalesce(sum(amount_wo_tax) FILTER (WHERE NOT is_refund), 0) AS wo,
         coalesce(sum(amount_w_tax) FILTER (WHERE NOT is_refund), 0) AS w,
         count(*) FILTER (WHERE is_refund) AS rn,
         coalesce(sum(amount_wo_tax) FILTER (WHERE is_refund), 0) AS rwo,
         coalesce(sum(amount_w_tax) FILTER (WHERE is_refund), 0) AS rw,
         coalesce(sum(ref_wo) FILTER (WHERE NOT is_refund), 0) AS ref_wo,
         coalesce(sum(ref_w) FILTER (WHERE NOT is_refund), 0) AS ref_w,
         coalesce(sum(ref_wo) FILTER (WHERE is_refund), 0) AS ref_rwo,
         coalesce(sum(ref_w) FILTER (WHERE is_refund), 0) AS ref_rw
  FROM priced GROUP BY ALL),
per_group AS (
  SELECT {{key}},
         sum(n) AS n, sum(ref_wo) AS wo, sum(ref_w) AS w, sum(rn) AS rn, sum(ref_rwo) AS rwo, sum(ref_rw) AS rw,
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
contacts_and_times AS (
  SELECT {{key}},
         count(DISTINCT contact_id) FILTER (WHERE NOT is_refund) AS uc,
         min(datetime) FILTER (WHERE NOT is_refund) AS first_at,
         max(datetime) FILTER (WHERE NOT is_refund) AS last_at
  FROM priced GROUP BY ALL)
