import { styleText } from "node:util";

/** The one JSON document of `--json`: nothing else ever goes to stdout in that mode. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printLine(text = ""): void {
  process.stdout.write(`${text}\n`);
}

/** Columns padded to their widest cell; the last column is left ragged. */
export function printTable(headers: string[], rows: string[][]): void {
  if (rows.length === 0) {
    printLine("(none)");
    return;
  }
  const widths = headers.map((header, column) => Math.max(header.length, ...rows.map((row) => (row[column] ?? "").length)));
  const format = (cells: string[]) =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell.padEnd(widths[column] ?? 0)))
      .join("  ")
      .trimEnd();
  printLine(emphasize(format(headers), process.stdout));
  for (const row of rows) printLine(format(row));
}

/** Dim text, only where a terminal shows it. */
export function dim(text: string, stream: NodeJS.WriteStream): string {
  return stream.isTTY ? styleText("dim", text) : text;
}

function emphasize(text: string, stream: NodeJS.WriteStream): string {
  return stream.isTTY ? styleText("bold", text) : text;
}

export const text = (value: unknown): string => (value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value));
