-- The attributed transactions of the period in {{from}}..{{to}} as an imported .duckdb file
-- (convx data import) holds them: scope_0.conv, every transaction attributed and priced once at
-- import (the same columns transactions.sql ends with). trend.sql continues this WITH list.
WITH
ref AS (SELECT any_value(reference_currency) AS currency FROM imported.main.t_plugins),
priced AS (SELECT * FROM imported.scope_0.conv WHERE day BETWEEN DATE '{{from}}' AND DATE '{{to}}'),
