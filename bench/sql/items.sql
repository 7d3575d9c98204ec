-- The conversion records of docs/reporting.md (GET /conversions/items), after transactions.sql:
-- one row per attributed transaction with the columns of convx's -o csv, in its default
-- sort (-datetime). bench/bare.js COPYs them TO a CSV file.
{{transactions}}
contact AS (
  SELECT contact_id, client_contact_id, first_name, surname, country FROM {{contacts}}
  QUALIFY row_number() OVER (PARTITION BY contact_id) = 1)
SELECT t.contact_id AS "contactId", k.client_contact_id AS "clientContactId",
       strftime(t.datetime, '%Y-%m-%dT%H:%M:%S.%gZ') AS "datetime", t.order_id AS "orderId",
       k.first_name AS "firstName", k.surname AS "surname",
       CAST(t.amount_w_tax AS DOUBLE) AS "conversionsAmount", t.currency AS "conversionsCurrency",
       CAST(t.ref_w AS DOUBLE) AS "conversionsReferenceAmount", (SELECT currency FROM ref) AS "referenceCurrency",
       coalesce(t.country, k.country) AS "country", t.is_refund AS "isRefund",
       'click' AS "attribution.touch", strftime(t.touch_datetime, '%Y-%m-%dT%H:%M:%S.%gZ') AS "attribution.datetime",
       -- hours from the click to the order, half away from zero to 2 decimals (ms / 36000 = centi-hours)
       round((epoch_ms(t.order_datetime) - epoch_ms(t.touch_datetime)) / 36000) / 100 AS "attribution.hoursToConversion",
       'last-click' AS "attribution.model", 30 AS "attribution.windowDays",
       t.source_type AS "source.type", t.source_id AS "source.id", i.name AS "source.name",
       i.campaign_id AS "source.campaignId", i.smartflow_id AS "source.smartflowId", i.smartflow_name AS "source.smartflowName",
       i.delivery_id AS "source.deliveryId", i.delivery_name AS "source.deliveryName",
       CASE WHEN t.source_type = 'smartflow'
         THEN '/v1/deliveries/' || url_encode(i.smartflow_id) || coalesce('/' || url_encode(i.delivery_id), '') || '/conversions'
         ELSE '/v1/campaigns/' || url_encode(i.campaign_id) || '/conversions' END
         || '?sourceType=' || url_encode(t.source_type) || '&sourceId=' || url_encode(t.source_id)
         || '&dateFrom={{from}}&dateTo={{to}}' AS "source.detailUrl",
       CASE WHEN t.source_type = 'smartflow'
         THEN '/v1/deliveries/' || url_encode(i.smartflow_id) || coalesce('/' || url_encode(i.delivery_id), '')
              || '/recipients/' || url_encode(t.contact_id) || '/activity'
         ELSE '/v1/campaigns/' || url_encode(i.campaign_id) || '/recipients/' || url_encode(t.contact_id) || '/activity' END AS "activityUrl"
FROM priced t
JOIN info i USING (source_type, source_id)
LEFT JOIN contact k USING (contact_id)
ORDER BY t.datetime DESC, t.order_id, t.is_refund
