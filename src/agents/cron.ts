/**
 * Cron schedules as neuro-san's `periodic` manifest key writes them (croniter's reading): five fields (minute, hour,
 * day of month, month, day of week) firing at second 0, or six with the second last (first with `secondAtBeginning`).
 * A field is `*`, a number or a name (`jan`, `mon`), a range `a-b`, any of these stepped (`*\/5`, `10-40/10`, `5/15`
 * from 5 on), or a list of them (`1,15,30`). Day of week runs 0-6 from Sunday, 7 is Sunday too. When both day fields
 * are restricted, a day matching either fires, as in every cron. Times are UTC, so replicas agree on every tick.
 */
export interface CronSchedule {
  /** The first firing strictly after `time`; undefined when there is none within five years. */
  next(time: Date): Date | undefined;
  /** The last firing at or before `time`; undefined when there is none within five years. */
  previous(time: Date): Date | undefined;
}

interface Field {
  name: string;
  min: number;
  max: number;
  names?: readonly string[];
}

const SECOND: Field = { name: "second", min: 0, max: 59 };
const MINUTE: Field = { name: "minute", min: 0, max: 59 };
const HOUR: Field = { name: "hour", min: 0, max: 23 };
const DAY_OF_MONTH: Field = { name: "day of month", min: 1, max: 31 };
const MONTH: Field = { name: "month", min: 1, max: 12, names: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"] };
const DAY_OF_WEEK: Field = { name: "day of week", min: 0, max: 7, names: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"] };

/** How far `next` and `previous` look before saying a schedule never fires (Feb 30 never does). */
const HORIZON_MS = 5 * 366 * 24 * 3600 * 1000;

export class CronError extends Error {
  override readonly name = "CronError";
}

/** Throws CronError naming the field that is wrong. */
export function parseCron(text: string, options: { secondAtBeginning?: boolean } = {}): CronSchedule {
  const parts = text.trim().split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) throw new CronError(`a cron schedule has 5 or 6 fields, this one ${parts.length}`);
  const [second, minute, hour, dayOfMonth, month, dayOfWeek] =
    parts.length === 5 ? ["0", ...parts] : options.secondAtBeginning ? parts : [parts[5]!, ...parts.slice(0, 5)];
  const weekdays = parseField(dayOfWeek!, DAY_OF_WEEK);
  if (weekdays.has(7)) weekdays.add(0);
  const schedule = new Schedule(
    parseField(second!, SECOND),
    parseField(minute!, MINUTE),
    parseField(hour!, HOUR),
    parseField(dayOfMonth!, DAY_OF_MONTH),
    parseField(month!, MONTH),
    weekdays,
    restricts(dayOfMonth!),
    restricts(dayOfWeek!),
  );
  if (schedule.next(new Date(Date.UTC(2000, 0, 1))) === undefined) throw new CronError("the schedule never fires");
  return schedule;
}

/** A day field that starts with `*` or `?` leaves the choice of days to the other, as in every cron. */
function restricts(text: string): boolean {
  return !text.startsWith("*") && !text.startsWith("?");
}

function parseField(text: string, field: Field): Set<number> {
  const values = new Set<number>();
  for (const item of text.toLowerCase().split(",")) {
    const [range = "", stepText, extra] = item.split("/");
    if (extra !== undefined || range === "") throw new CronError(`${field.name}: ${JSON.stringify(item)} is not a value, range or step`);
    const step = stepText === undefined ? 1 : numberOf(stepText, field, 1, field.max - field.min + 1);
    let low: number;
    let high: number;
    if (range === "*" || range === "?") [low, high] = [field.min, field.max === 7 ? 6 : field.max];
    else if (range.includes("-")) {
      const [from = "", to = "", more] = range.split("-");
      if (more !== undefined) throw new CronError(`${field.name}: ${JSON.stringify(range)} is not a range`);
      [low, high] = [valueOf(from, field), valueOf(to, field)];
      if (low > high) throw new CronError(`${field.name}: ${JSON.stringify(range)} runs backwards`);
    } else {
      low = valueOf(range, field);
      // `5/15` is every 15 from 5 on; a lone `5` is 5 alone.
      high = stepText === undefined ? low : field.max;
    }
    for (let value = low; value <= high; value += step) values.add(value);
  }
  return values;
}

function valueOf(text: string, field: Field): number {
  const named = field.names?.indexOf(text) ?? -1;
  if (named >= 0) return field.min === 0 ? named : named + 1;
  return numberOf(text, field, field.min, field.max);
}

function numberOf(text: string, field: Field, min: number, max: number): number {
  if (!/^\d+$/.test(text)) throw new CronError(`${field.name}: ${JSON.stringify(text)} is not a number${field.names ? " or a name" : ""}`);
  const value = Number(text);
  if (value < min || value > max) throw new CronError(`${field.name}: ${value} is outside ${min}-${max}`);
  return value;
}

class Schedule implements CronSchedule {
  constructor(
    private readonly seconds: ReadonlySet<number>,
    private readonly minutes: ReadonlySet<number>,
    private readonly hours: ReadonlySet<number>,
    private readonly daysOfMonth: ReadonlySet<number>,
    private readonly months: ReadonlySet<number>,
    private readonly daysOfWeek: ReadonlySet<number>,
    private readonly dayOfMonthRestricted: boolean,
    private readonly dayOfWeekRestricted: boolean,
  ) {}

  next(time: Date): Date | undefined {
    const end = time.getTime() + HORIZON_MS;
    // Each mismatch skips to the start of the next unit that could match.
    let t = new Date(Math.floor(time.getTime() / 1000) * 1000 + 1000);
    while (t.getTime() <= end) {
      if (!this.months.has(t.getUTCMonth() + 1)) t = utc(t.getUTCFullYear(), t.getUTCMonth() + 1, 1);
      else if (!this.dayMatches(t)) t = utc(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate() + 1);
      else if (!this.hours.has(t.getUTCHours())) t = utc(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours() + 1);
      else if (!this.minutes.has(t.getUTCMinutes())) t = utc(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours(), t.getUTCMinutes() + 1);
      else if (!this.seconds.has(t.getUTCSeconds())) t = new Date(t.getTime() + 1000);
      else return t;
    }
    return undefined;
  }

  previous(time: Date): Date | undefined {
    const end = time.getTime() - HORIZON_MS;
    // Each mismatch steps back to the last second of the previous unit that could match.
    let t = new Date(Math.floor(time.getTime() / 1000) * 1000);
    while (t.getTime() >= end) {
      if (!this.months.has(t.getUTCMonth() + 1)) t = new Date(utc(t.getUTCFullYear(), t.getUTCMonth(), 1).getTime() - 1000);
      else if (!this.dayMatches(t)) t = new Date(utc(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate()).getTime() - 1000);
      else if (!this.hours.has(t.getUTCHours())) t = new Date(utc(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours()).getTime() - 1000);
      else if (!this.minutes.has(t.getUTCMinutes())) t = new Date(utc(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate(), t.getUTCHours(), t.getUTCMinutes()).getTime() - 1000);
      else if (!this.seconds.has(t.getUTCSeconds())) t = new Date(t.getTime() - 1000);
      else return t;
    }
    return undefined;
  }

  private dayMatches(t: Date): boolean {
    const byMonth = this.daysOfMonth.has(t.getUTCDate());
    const byWeek = this.daysOfWeek.has(t.getUTCDay());
    if (this.dayOfMonthRestricted && this.dayOfWeekRestricted) return byMonth || byWeek;
    return byMonth && byWeek;
  }
}

function utc(year: number, month: number, day: number, hour = 0, minute = 0): Date {
  return new Date(Date.UTC(year, month, day, hour, minute));
}
