import type { JsonObject } from "@bufbuild/protobuf";
import type { CodedTool } from "../coded-tool.js";

/**
 * The default toolbox's `get_current_date_time`: the current date and time at a UTC offset in hours (which wins) or
 * in an IANA time zone, else in UTC, as ISO 8601 with its offset.
 */
export class GetCurrentDateTime implements CodedTool {
  invoke(args: JsonObject): JsonObject {
    const now = new Date();
    const offset = args["utc_offset"];
    if (typeof offset === "number") {
      if (!(offset >= -24 && offset <= 24)) throw new Error("utc_offset must be a number of hours between -24 and 24");
      const minutes = Math.round(offset * 60);
      return { date_time: isoAt(new Date(now.getTime() + minutes * 60_000), minutes), time_zone: `UTC${formatOffset(minutes)}` };
    }
    const timeZone = typeof args["iana_timezone"] === "string" && args["iana_timezone"] !== "" ? args["iana_timezone"] : "UTC";
    let minutes: number;
    try {
      minutes = offsetMinutesIn(timeZone, now);
    } catch {
      throw new Error(`unknown IANA time zone ${timeZone}`);
    }
    return { date_time: isoAt(new Date(now.getTime() + minutes * 60_000), minutes), time_zone: timeZone };
  }
}

/** `shifted` already carries the local wall-clock time in its UTC fields. */
function isoAt(shifted: Date, offsetMinutes: number): string {
  return `${shifted.toISOString().slice(0, 19)}${formatOffset(offsetMinutes)}`;
}

function formatOffset(minutes: number): string {
  const sign = minutes < 0 ? "-" : "+";
  const absolute = Math.abs(minutes);
  return `${sign}${String(Math.floor(absolute / 60)).padStart(2, "0")}:${String(absolute % 60).padStart(2, "0")}`;
}

/** The zone's offset from UTC at that instant, as Intl names it (`GMT+05:30`, `GMT` for zero). */
function offsetMinutesIn(timeZone: string, at: Date): number {
  const name = new Intl.DateTimeFormat("en-US", { timeZone, timeZoneName: "longOffset" })
    .formatToParts(at)
    .find((part) => part.type === "timeZoneName")?.value;
  const match = /GMT([+-])(\d{2}):(\d{2})/.exec(name ?? "");
  if (match === null) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3]);
  return match[1] === "-" ? -minutes : minutes;
}
