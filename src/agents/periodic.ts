import type { JsonObject, JsonValue } from "./hocon.js";
import { CronError, parseCron, type CronSchedule } from "./cron.js";
import { isJsonObject } from "../json.js";

/** One of the runs a manifest's `periodic` key schedules: its text, sly_data and metadata at every firing. */
export interface PeriodicInteraction {
  /** Its place in `interactions`: with the network's name, what names its runs. */
  index: number;
  /** As written: what the runs' operations say they follow. */
  cronSchedule: string;
  schedule: CronSchedule;
  text: string;
  slyData: JsonObject;
  metadata: Record<string, string>;
}

/** neuro-san's defaults: every minute at second 0, "Do your thing", the system as the user. */
const EVERY_MINUTE = "*/1 * * * * 0";
const DEFAULT_TEXT = "Do your thing";
const DEFAULT_METADATA: Readonly<Record<string, string>> = { user_id: "system" };
const INTERACTION_KEYS = new Set(["enable", "cron_schedule", "second_at_beginning", "text", "sly_data", "metadata"]);

/**
 * A manifest entry's `periodic`, as neuro-san reads it: `true` (every minute), `false`, a cron string, one interaction's
 * keys, or `{interactions: [...]}`. A bad interaction is left out with a warning; the others still run.
 */
export function periodicOf(value: JsonValue | undefined): { interactions: PeriodicInteraction[]; warnings: string[] } {
  const warnings: string[] = [];
  if (value === undefined || value === false) return { interactions: [], warnings };
  const written = interactionsWritten(value);
  if (written === undefined) {
    warnings.push("periodic must be true, false, a cron schedule or {interactions: [...]}; no runs are scheduled");
    return { interactions: [], warnings };
  }
  const listed = isJsonObject(value) && "interactions" in value;
  const interactions: PeriodicInteraction[] = [];
  written.forEach((raw, index) => {
    const where = listed ? `periodic.interactions[${index}]` : "periodic";
    const interaction = interactionOf(raw, index);
    if (typeof interaction === "string") warnings.push(`${where}: ${interaction}; it is not scheduled`);
    else if (interaction !== undefined) {
      interactions.push(interaction.interaction);
      warnings.push(...interaction.ignored.map((key) => `${where}.${key} is not a key of a periodic interaction; ignored`));
    }
  });
  return { interactions, warnings };
}

/** The interactions as written; an object without `interactions` is the one interaction, as neuro-san takes it. */
function interactionsWritten(value: JsonValue): JsonValue[] | undefined {
  if (value === true) return [{}];
  if (typeof value === "string") return [{ cron_schedule: value }];
  if (!isJsonObject(value)) return undefined;
  if (!("interactions" in value)) return [value];
  return Array.isArray(value.interactions) ? value.interactions : undefined;
}

function interactionOf(raw: JsonValue, index: number): { interaction: PeriodicInteraction; ignored: string[] } | string | undefined {
  if (!isJsonObject(raw)) return "must be an object";
  const { enable = true, cron_schedule: cronSchedule = EVERY_MINUTE, second_at_beginning: secondAtBeginning = false, text = DEFAULT_TEXT, sly_data: slyData = {}, metadata = DEFAULT_METADATA } = raw;
  if (typeof enable !== "boolean") return "enable must be true or false";
  if (!enable) return undefined;
  if (typeof cronSchedule !== "string") return "cron_schedule must be a string";
  if (typeof secondAtBeginning !== "boolean") return "second_at_beginning must be true or false";
  if (typeof text !== "string" || text === "") return "text must be a non-empty string";
  if (!isJsonObject(slyData)) return "sly_data must be an object";
  if (!isJsonObject(metadata) || !Object.values(metadata).every((header) => typeof header === "string")) return "metadata must be an object of strings";
  let schedule: CronSchedule;
  try {
    schedule = parseCron(cronSchedule, { secondAtBeginning });
  } catch (error) {
    if (error instanceof CronError) return `cron_schedule ${JSON.stringify(cronSchedule)}: ${error.message}`;
    throw error;
  }
  return {
    interaction: { index, cronSchedule, schedule, text, slyData, metadata: metadata as Record<string, string> },
    ignored: Object.keys(raw).filter((key) => !INTERACTION_KEYS.has(key)),
  };
}
