import { describe, expect, it } from "vitest";
import { CronError, parseCron } from "../../src/agents/cron.js";
import { periodicOf } from "../../src/agents/periodic.js";

const at = (iso: string) => new Date(iso);
const nexts = (cron: string, from: string, count: number, options: { secondAtBeginning?: boolean } = {}) => {
  const schedule = parseCron(cron, options);
  const times: string[] = [];
  for (let time: Date | undefined = at(from); times.length < count; ) {
    time = schedule.next(time);
    if (time === undefined) break;
    times.push(time.toISOString());
  }
  return times;
};

describe("cron schedules, as neuro-san's periodic key writes them", () => {
  it("five fields fire at second 0; a sixth is the second, or the first with second_at_beginning", () => {
    expect(nexts("*/1 * * * *", "2026-12-04T12:00:30Z", 2)).toEqual(["2026-12-04T12:01:00.000Z", "2026-12-04T12:02:00.000Z"]);
    expect(nexts("*/1 * * * * 0", "2026-12-04T12:00:30Z", 1)).toEqual(["2026-12-04T12:01:00.000Z"]);
    expect(nexts("* * * * * */20", "2026-12-04T12:00:30Z", 3)).toEqual(["2026-12-04T12:00:40.000Z", "2026-12-04T12:01:00.000Z", "2026-12-04T12:01:20.000Z"]);
    expect(nexts("15 0 */2 * * *", "2026-12-04T12:00:30Z", 2, { secondAtBeginning: true })).toEqual(["2026-12-04T14:00:15.000Z", "2026-12-04T16:00:15.000Z"]);
  });

  it("reads values, ranges, steps from a start, lists and names", () => {
    expect(nexts("30 9-17/4 * * mon-fri", "2026-12-04T12:00:00Z", 4)).toEqual([
      "2026-12-04T13:30:00.000Z",
      "2026-12-04T17:30:00.000Z",
      "2026-12-07T09:30:00.000Z",
      "2026-12-07T13:30:00.000Z",
    ]);
    expect(nexts("5/20 0 1 JAN,jul *", "2026-12-04T12:00:00Z", 4)).toEqual([
      "2027-01-01T00:05:00.000Z",
      "2027-01-01T00:25:00.000Z",
      "2027-01-01T00:45:00.000Z",
      "2027-07-01T00:05:00.000Z",
    ]);
    expect(nexts("0 0 * * 7", "2026-12-04T12:00:00Z", 1)).toEqual(["2026-12-06T00:00:00.000Z"]);
  });

  it("a day matching either restricted day field fires, as in every cron; a star leaves it to the other", () => {
    expect(nexts("0 0 13 * fri", "2026-12-04T12:00:00Z", 3)).toEqual(["2026-12-11T00:00:00.000Z", "2026-12-13T00:00:00.000Z", "2026-12-18T00:00:00.000Z"]);
    expect(nexts("0 0 */10 * *", "2026-12-04T12:00:00Z", 2)).toEqual(["2026-12-11T00:00:00.000Z", "2026-12-21T00:00:00.000Z"]);
    expect(nexts("0 12 29 2 *", "2026-12-04T12:00:00Z", 1)).toEqual(["2028-02-29T12:00:00.000Z"]);
  });

  it("previous is the last firing at or before a time", () => {
    const schedule = parseCron("*/15 * * * *");
    expect(schedule.previous(at("2026-12-04T12:31:00Z"))?.toISOString()).toBe("2026-12-04T12:30:00.000Z");
    expect(schedule.previous(at("2026-12-04T12:30:00Z"))?.toISOString()).toBe("2026-12-04T12:30:00.000Z");
    expect(parseCron("0 0 1 1 *").previous(at("2026-12-04T12:00:00Z"))?.toISOString()).toBe("2026-01-01T00:00:00.000Z");
    expect(parseCron("0 0 13 * fri").previous(at("2026-12-12T12:00:00Z"))?.toISOString()).toBe("2026-12-11T00:00:00.000Z");
  });

  it.each([
    ["* * * *", "5 or 6 fields"],
    ["60 * * * *", "minute: 60 is outside 0-59"],
    ["* * * * mon-sun-x", "day of week"],
    ["*/0 * * * *", "minute: 0 is outside 1-60"],
    ["5-1 * * * *", "runs backwards"],
    ["0 0 30 2 *", "never fires"],
    ["0 0 * foo *", 'month: "foo" is not a number or a name'],
  ])("refuses %j, saying %s", (cron, reason) => {
    expect(() => parseCron(cron)).toThrow(CronError);
    expect(() => parseCron(cron)).toThrow(reason);
  });
});

describe("the periodic manifest key", () => {
  it("true is every minute with neuro-san's text, sly_data and metadata", () => {
    const { interactions, warnings } = periodicOf(true);
    expect(warnings).toEqual([]);
    expect(interactions).toMatchObject([{ index: 0, cronSchedule: "*/1 * * * * 0", text: "Do your thing", slyData: {}, metadata: { user_id: "system" } }]);
  });

  it("a string is the cron schedule; an object without interactions is the one interaction; false and enable: false run nothing", () => {
    expect(periodicOf("0 * * * *").interactions.map((interaction) => interaction.cronSchedule)).toEqual(["0 * * * *"]);
    expect(periodicOf({ cron_schedule: "0 0 * * *", text: "Nightly" }).interactions).toMatchObject([{ cronSchedule: "0 0 * * *", text: "Nightly" }]);
    expect(periodicOf(false).interactions).toEqual([]);
    expect(periodicOf({ interactions: [{ enable: false }, { text: "On" }] }).interactions).toMatchObject([{ index: 1, text: "On" }]);
  });

  it("a bad interaction is left out with a warning naming it; the others run", () => {
    const { interactions, warnings } = periodicOf({ interactions: [{ cron_schedule: "61 * * * *" }, { text: "ok", colour: "blue" }, { metadata: { n: 1 } }] });
    expect(interactions.map((interaction) => interaction.index)).toEqual([1]);
    expect(warnings).toEqual([
      'periodic.interactions[0]: cron_schedule "61 * * * *": minute: 61 is outside 0-59; it is not scheduled',
      "periodic.interactions[1].colour is not a key of a periodic interaction; ignored",
      "periodic.interactions[2]: metadata must be an object of strings; it is not scheduled",
    ]);
    expect(periodicOf(5).warnings).toEqual(["periodic must be true, false, a cron schedule or {interactions: [...]}; no runs are scheduled"]);
  });
});
