import { styleText } from "node:util";

/** pino's numeric levels, as a person reads them. */
const LEVELS: Record<number, { name: string; color: Parameters<typeof styleText>[0] }> = {
  10: { name: "TRACE", color: "gray" },
  20: { name: "DEBUG", color: "gray" },
  30: { name: "INFO", color: "green" },
  40: { name: "WARN", color: "yellow" },
  50: { name: "ERROR", color: "red" },
  60: { name: "FATAL", color: "red" },
};

/** Fields every line carries, or that the line already shows in its own way. */
const SHOWN = new Set(["level", "time", "msg", "service", "pid", "hostname", "err"]);

/**
 * One JSON log line of the server, as a person reads it on a terminal: `14:02:38 INFO  message  key=value ...`, the
 * fields dimmed and an error's stack below. A line that is not JSON is shown as it is.
 */
export function formatLogLine(line: string, color: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return line;
  }
  if (entry === null || typeof entry !== "object" || Array.isArray(entry)) return line;
  const paint = (style: Parameters<typeof styleText>[0], text: string) => (color ? styleText(style, text) : text);
  const level = LEVELS[Number(entry.level)] ?? { name: String(entry.level ?? "LOG"), color: "white" as const };
  const time = typeof entry.time === "string" ? new Date(entry.time) : undefined;
  const clock = time && !Number.isNaN(time.getTime()) ? time.toTimeString().slice(0, 8) : "--:--:--";
  const fields = Object.entries(entry)
    .filter(([key]) => !SHOWN.has(key))
    .map(([key, value]) => `${key}=${typeof value === "string" && /^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`);
  const head = `${paint("dim", clock)} ${paint(level.color, level.name.padEnd(5))} ${String(entry.msg ?? "")}`;
  const error = entry.err as { message?: unknown; stack?: unknown } | undefined;
  const stack = error === undefined ? "" : `\n${paint("red", String(error.stack ?? error.message ?? JSON.stringify(error)))}`;
  return `${head}${fields.length > 0 ? `  ${paint("dim", fields.join(" "))}` : ""}${stack}`;
}
