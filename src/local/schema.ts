/** The tables of a local dataset (docs/datasets.md) and their typed columns. */

export type ColumnType = 'string' | 'currency' | 'timestamp' | 'date' | 'amount' | 'rate' | 'boolean' | 'sourceType';

export interface ColumnSpec {
  name: string;
  type: ColumnType;
  required: boolean;
}

export interface TableSpec {
  name: TableName;
  columns: ColumnSpec[];
  /** Keep the columns not listed (contacts: merge fields). */
  keepOtherColumns?: boolean;
  /** Nothing depends on its rows' file order (no row_id), so Parquet files can be read in place. */
  unordered?: boolean;
}

export const TABLE_NAMES = ['orders', 'touches', 'sources', 'fx', 'plugins', 'contacts', 'assets'] as const;
export type TableName = (typeof TABLE_NAMES)[number];

const col = (name: string, type: ColumnType, required = false): ColumnSpec => ({ name, type, required });

export const TABLES: Record<TableName, TableSpec> = {
  orders: {
    name: 'orders',
    columns: [
      col('order_id', 'string', true),
      col('contact_id', 'string', true),
      col('datetime', 'timestamp', true),
      col('currency', 'currency', true),
      col('amount_wo_tax', 'amount', true),
      col('amount_w_tax', 'amount', true),
      col('country', 'string'),
      col('is_refund', 'boolean'),
      col('status', 'string'),
    ],
  },
  touches: {
    name: 'touches',
    unordered: true,
    columns: [
      col('contact_id', 'string', true),
      col('datetime', 'timestamp', true),
      col('touch', 'string', true),
      col('source_type', 'sourceType', true),
      col('source_id', 'string', true),
    ],
  },
  sources: {
    name: 'sources',
    columns: [
      col('source_type', 'sourceType', true),
      col('source_id', 'string', true),
      col('name', 'string'),
      col('campaign_id', 'string'),
      col('smartflow_id', 'string'),
      col('smartflow_name', 'string'),
      col('delivery_id', 'string'),
      col('delivery_name', 'string'),
      col('started_at', 'timestamp'),
    ],
  },
  fx: {
    name: 'fx',
    columns: [
      col('date', 'date', true),
      col('currency', 'currency', true),
      col('rate', 'rate', true),
      col('reference_currency', 'currency'),
    ],
  },
  plugins: {
    name: 'plugins',
    columns: [col('plugin_id', 'string', true), col('reference_currency', 'currency'), col('name', 'string')],
  },
  contacts: {
    name: 'contacts',
    keepOtherColumns: true,
    columns: [
      col('contact_id', 'string', true),
      col('client_contact_id', 'string'),
      col('email', 'string'),
      col('first_name', 'string'),
      col('surname', 'string'),
      col('language', 'string'),
      col('country', 'string'),
      col('consent', 'boolean'),
      col('unsubscribed', 'boolean'),
      col('lists', 'string'),
    ],
  },
  assets: {
    name: 'assets',
    columns: [
      col('asset_id', 'string', true),
      col('language', 'string'),
      col('subject', 'string'),
      col('html', 'string'),
      col('text', 'string'),
      col('preheader', 'string'),
    ],
  },
};

export const SQL_TYPES = {
  string: 'VARCHAR',
  currency: 'VARCHAR',
  timestamp: 'TIMESTAMP',
  date: 'DATE',
  amount: 'DECIMAL(18,4)',
  rate: 'DECIMAL(18,10)',
  boolean: 'BOOLEAN',
  sourceType: 'VARCHAR',
} as const satisfies Record<ColumnType, string>;

/** The SQL type of a table's column, as the typed tables hold it (an empty stand-in for a missing table takes it too). */
export function columnSqlType(table: TableName, column: string): (typeof SQL_TYPES)[ColumnType] {
  const spec = TABLES[table].columns.find((c) => c.name === column);
  if (!spec) throw new Error(`internal: ${table} has no column ${column}`);
  return SQL_TYPES[spec.type];
}

export const TYPE_DESCRIPTIONS: Record<ColumnType, string> = {
  string: 'text',
  currency: 'a currency code',
  timestamp: 'an ISO 8601 timestamp',
  date: 'a date (YYYY-MM-DD)',
  amount: 'a decimal number with a dot (at most 4 decimals)',
  rate: 'a positive decimal number (at most 10 decimals)',
  boolean: 'a boolean (true, false, 1 or 0)',
  sourceType: 'one of campaign, automation, smartflow',
};

export const CANCELLED_STATUSES = ['cancelled', 'canceled', 'storno', 'void', 'voided'];
