import type { OrderDiagnosis } from '../backend.js';
import { WINDOW_DAYS } from '../model/types.js';
import type { Scope } from './attribution.js';
import type { Database } from './db.js';
import { CANCELLED_STATUSES } from './schema.js';

/**
 * Why an order is not among the conversions of a period (the `order` command).
 * It reads the order's own rows and its contact's clicks, never the attributed
 * tables, which a CLI command builds for its period only.
 */
export async function diagnoseOrder(
  scope: Scope,
  db: Database,
  orderId: string,
  period?: { dateFrom: string; dateTo: string },
): Promise<OrderDiagnosis> {
  const t = (name: string) => scope.table(name);
  const rows = await db.all<{ is_refund: boolean; n: bigint }>(
    `SELECT coalesce(is_refund, false) AS is_refund, count(*) AS n FROM ${t('orders')} WHERE order_id = $orderId GROUP BY 1`,
    { orderId },
  );
  if (rows.length === 0) return { orderId, found: false, reasons: [] };
  const head = await db.one<{ contact_id: string; datetime: Date; amount_wo_tax: unknown; status: string | null }>(
    // The order row that counts: the earliest (then first in file), as the attribution takes it.
    `SELECT contact_id, datetime, amount_wo_tax, status FROM ${t('orders')}
     WHERE order_id = $orderId AND NOT coalesce(is_refund, false) ORDER BY datetime, row_id LIMIT 1`,
    { orderId },
  );
  const reasons: string[] = [];
  if (!head) {
    reasons.push('the dataset holds only refunds for this order id, no order row, so there is nothing to attribute them to');
    return { orderId, found: true, reasons };
  }
  const status = (head.status ?? '').trim().toLowerCase();
  if (CANCELLED_STATUSES.includes(status)) reasons.push(`the order is cancelled (status "${head.status}"), so neither it nor its refunds count`);
  if (Number(String(head.amount_wo_tax)) === 0) reasons.push('the order has zero net revenue (amount_wo_tax = 0), which is not a conversion');
  const click = await db.one<{ datetime: Date; source_type: string; source_id: string }>(
    `SELECT datetime, source_type, source_id FROM ${t('touches')}
     WHERE contact_id = $contact AND lower(trim(touch)) = 'click' AND datetime <= CAST($at AS TIMESTAMP)
     ORDER BY datetime DESC, source_type DESC, source_id DESC LIMIT 1`,
    { contact: head.contact_id, at: head.datetime.toISOString() },
  );
  const orderAt = head.datetime.toISOString();
  if (!click) {
    reasons.push(`contact ${head.contact_id} has no click at or before the order (${orderAt}), so no source can be credited`);
  } else {
    const days = (head.datetime.getTime() - click.datetime.getTime()) / 86_400_000;
    if (days > WINDOW_DAYS) {
      reasons.push(
        `the contact's last click before the order was ${click.datetime.toISOString()} on ${click.source_type} ${click.source_id}, ${days.toFixed(1)} days earlier: outside the ${WINDOW_DAYS}-day window`,
      );
    }
  }
  if (reasons.length === 0 && period) {
    reasons.push(
      `the order is a conversion, but none of its transactions falls within ${period.dateFrom}..${period.dateTo} (the order is from ${orderAt.slice(0, 10)})`,
    );
  }
  return { orderId, found: true, reasons };
}
