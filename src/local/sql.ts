/**
 * The one way convx writes SQL: the `sql` tagged template. Every value
 * interpolated into it goes in as a parameter; only what is marked otherwise
 * is spliced as text: an identifier (`ident`, `table`), a constant that must be
 * a literal (`literal`: a path of a table function, a view's plugin, a period
 * bound Parquet statistics must see), a whole number (`int`), a fragment the
 * source code spells out (`trusted`: its type must be a string literal), or
 * another `Sql`. So "no SQL from text" holds by construction: `Database` takes
 * only an `Sql`, and test/sql-layer.test.ts checks that no other module builds
 * SQL in a plain template string.
 */

/** A value DuckDB binds as a parameter. */
export type SqlValue = string | number | boolean | bigint | null;

/** A piece of SQL with its parameters, built by `sql` and the helpers of this module. */
export class Sql {
  /** Use `sql`, never this constructor: its text is trusted as it is. */
  private constructor(
    /** The texts between the pieces (one more than the pieces). */
    private readonly texts: readonly string[],
    private readonly pieces: readonly (SqlValue | Sql)[],
  ) {}

  /** @internal */
  static of(texts: readonly string[], pieces: readonly (SqlValue | Sql)[]): Sql {
    return new Sql(texts, pieces);
  }

  /** True when it holds no text and no piece (an empty condition list joined, say). */
  get empty(): boolean {
    return this.pieces.length === 0 && this.texts.every((t) => t === '');
  }

  /** Writes the text, naming each parameter $p1, $p2… in order of appearance. */
  compileInto(out: { text: string; params: Record<string, SqlValue> }, counter: { n: number }): void {
    this.texts.forEach((text, i) => {
      out.text += text;
      if (i >= this.pieces.length) return;
      const piece = this.pieces[i] as SqlValue | Sql;
      if (piece instanceof Sql) {
        piece.compileInto(out, counter);
      } else {
        const name = `p${++counter.n}`;
        out.params[name] = piece;
        out.text += `$${name}`;
      }
    });
  }
}

/** SQL text and its named parameters, as DuckDB takes them. */
export interface Compiled {
  text: string;
  params: Record<string, SqlValue>;
}

/** The text and parameters of a query. */
export function compile(query: Sql): Compiled {
  const out: Compiled = { text: '', params: {} };
  query.compileInto(out, { n: 0 });
  return out;
}

/** SQL with every interpolated value a parameter (an `Sql` piece is spliced as the SQL it is). */
export function sql(texts: TemplateStringsArray, ...pieces: (SqlValue | Sql)[]): Sql {
  return Sql.of([...texts], pieces);
}

/** Text spliced as it is: only for what the code itself spells out. */
function verbatim(text: string): Sql {
  return Sql.of([text], []);
}

/**
 * A fragment the source code spells out (a keyword, `'DESC'`, a type name): its type must be a
 * string literal or a union of them, never `string`, so no value read at run time can reach it.
 */
export function trusted<T extends string>(text: string extends T ? never : T): Sql {
  return verbatim(text);
}

/** Quotes an identifier we generated or validated (a column name found in a file, a field from a fixed list). */
export function ident(name: string): Sql {
  return verbatim(quoteIdent(name));
}

/** The quoted text of an identifier (for the few places that name one outside SQL, such as a DuckDB error). */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/**
 * The one SQL string literal of convx, for the few values that cannot be parameters
 * (paths of table functions, a view's plugin, a period bound that Parquet statistics must see as a constant).
 */
export function literal(value: string): Sql {
  return verbatim(quoteString(value));
}

/** The quoted text of a string literal (see literal). */
export function quoteString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** A whole number spliced as text (LIMIT, OFFSET, a size): refused unless it is a safe integer. */
export function int(value: number | bigint): Sql {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) throw new Error(`not a whole number for SQL: ${value}`);
  return verbatim(String(value));
}

/** The name of a dataset's typed table (t_orders…), optionally in an attached database's schema. */
export function tableName(name: string): string {
  return `t_${name}`;
}

/** A dataset's typed table as an identifier, optionally qualified (`imported.main`, `out.main`). */
export function table(name: string, qualifier?: 'imported.main' | 'out.main' | 'main'): Sql {
  const quoted = quoteIdent(tableName(name));
  return verbatim(qualifier ? `${qualifier}.${quoted}` : quoted);
}

/** Pieces joined with a separator (a comma by default); none gives an empty Sql. */
export function join(parts: readonly Sql[], separator: Sql = verbatim(', ')): Sql {
  if (parts.length === 0) return verbatim('');
  const texts: string[] = [''];
  const pieces: Sql[] = [];
  parts.forEach((part, i) => {
    if (i > 0) {
      pieces.push(separator);
      texts.push('');
    }
    pieces.push(part);
    texts.push('');
  });
  return Sql.of(texts, pieces);
}

/** "(p1, p2, …)" of parameters for IN; a list of none is "(NULL)", which matches nothing. */
export function list(values: readonly SqlValue[]): Sql {
  if (values.length === 0) return verbatim('(NULL)');
  return sql`(${join(values.map((v) => sql`${v}`))})`;
}

/** The empty piece, for an optional clause. */
export const EMPTY: Sql = verbatim('');
