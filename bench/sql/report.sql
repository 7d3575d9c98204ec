-- The aggregate per source of docs/reporting.md (GET /conversions) as convx prints it with
-- -o json: the rows in the default sort, -conversionsAmountWTax, name.

-- An average to 2 decimals, half away from zero, 0 for no orders (4.7): from whole cents.
CREATE OR REPLACE TEMP MACRO average(amount, n) AS
  CASE WHEN n = 0 THEN 0.0
       ELSE CAST(sign(amount) * ((2 * abs(CAST(amount * 100 AS HUGEINT)) + n) // (2 * n)) AS DOUBLE) / 100 END;

{{transactions}}
{{sums:source_type, source_id}}

SELECT i.source_id AS "id", i.name AS "name",
       struct_pack(type := i.source_type, id := i.source_id, name := i.name, campaignId := i.campaign_id,
                   smartflowId := i.smartflow_id, smartflowName := i.smartflow_name,
                   deliveryId := i.delivery_id, deliveryName := i.delivery_name,
                   detailUrl := CASE WHEN i.source_type = 'smartflow'
                     THEN '/v1/deliveries/' || url_encode(i.smartflow_id) || coalesce('/' || url_encode(i.delivery_id), '') || '/conversions'
                     ELSE '/v1/campaigns/' || url_encode(i.campaign_id) || '/conversions' END
                     -- the row's source and period (docs/reporting.md, Identity and links)
                     || '?sourceType=' || url_encode(i.source_type) || '&sourceId=' || url_encode(i.source_id)
                     || '&dateFrom={{from}}&dateTo={{to}}') AS "source",
       strftime(i.started_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "sourceStartedAt",
       strftime(c.first_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "firstConversionAt",
       strftime(c.last_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS "lastConversionAt",
       CAST(g.wo AS DOUBLE) AS "conversionsAmountWoTax", CAST(g.w AS DOUBLE) AS "conversionsAmountWTax",
       CAST(g.n AS INTEGER) AS "conversionsNumber", (SELECT currency FROM ref) AS "referenceCurrency",
       CAST(c.uc AS INTEGER) AS "uniqueContacts",
       average(g.w, g.n) AS "averageConversion", average(g.w, c.uc) AS "averageUniqueConversion",
       CAST(g.rwo AS DOUBLE) AS "refundsAmountWoTax", CAST(g.rw AS DOUBLE) AS "refundsAmountWTax", CAST(g.rn AS INTEGER) AS "refundsNumber",
       CAST(g.wo + g.rwo AS DOUBLE) AS "grossConversionsAmountWoTax", CAST(g.w + g.rw AS DOUBLE) AS "grossConversionsAmountWTax",
       CAST(g.n + g.rn AS INTEGER) AS "grossConversionsNumber",
       g.breakdown AS "breakdown"
FROM per_group g
JOIN contacts_and_times c USING (source_type, source_id)
JOIN info i USING (source_type, source_id)
ORDER BY g.w DESC, i.name, i.source_type, i.source_id
