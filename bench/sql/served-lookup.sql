-- The floor server's order look-up: an order's conversion records ($1 the order id, in the period
-- $2..$3) with the columns of GET /conversions/items, newest first.
SELECT t.contact_id AS "contactId", t.client_contact_id AS "clientContactId",
       strftime(t.datetime, '%Y-%m-%dT%H:%M:%S.%gZ') AS "datetime", t.order_id AS "orderId",
       t.first_name AS "firstName", t.surname AS "surname",
       CAST(t.amount_w_tax AS DOUBLE) AS "conversionsAmount", t.currency AS "conversionsCurrency",
       CAST(t.ref_w AS DOUBLE) AS "conversionsReferenceAmount", (SELECT currency FROM ref) AS "referenceCurrency",
       t.country AS "country", t.is_refund AS "isRefund",
       struct_pack(touch := 'click', datetime := strftime(t.touch_datetime, '%Y-%m-%dT%H:%M:%S.%gZ'),
                   hoursToConversion := t.centi_hours / 100, model := 'last-click', windowDays := 30) AS "attribution",
       struct_pack(type := t.source_type, id := t.source_id, name := t.name, campaignId := t.campaign_id,
                   smartflowId := t.smartflow_id, smartflowName := t.smartflow_name,
                   deliveryId := t.delivery_id, deliveryName := t.delivery_name) AS "source"
-- the order's rows by the index on order_id first (alone in its scan, so that the index answers it)
FROM (SELECT * FROM imported.scope_0.conv WHERE order_id = $1 OFFSET 0) t
WHERE t.day BETWEEN CAST($2 AS DATE) AND CAST($3 AS DATE)
ORDER BY t.datetime DESC, t.is_refund
