import type { CodedTool } from "../coded-tools.js";
import { GetCurrentDateTime } from "./current-date-time.js";
import { REQUESTS_GET_CLASS } from "./library-tools.js";
import { readToolboxInfo, type Toolbox } from "./toolbox-info.js";

const CURRENT_DATE_TIME_CLASS = "get_current_date_time.GetCurrentDateTime";

/** The toolbox every network starts from; AGENT_TOOLBOX_INFO_FILE and a network's `toolbox_info_file` extend it. */
export const DEFAULT_TOOLBOX: Toolbox = readToolboxInfo(
  {
    // Fetches only what `allowed_urls` (in the entry's or the agent's args) lets it.
    requests_get: { class: REQUESTS_GET_CLASS },
    get_current_date_time: {
      class: CURRENT_DATE_TIME_CLASS,
      description: "Tells the current date and time, at a UTC offset in hours or in an IANA time zone (UTC when neither is given).",
      parameters: {
        type: "object",
        properties: {
          utc_offset: { type: "number", description: "Hours from UTC, between -24 and 24, e.g. -5 or 5.5; wins over iana_timezone." },
          iana_timezone: { type: "string", description: "An IANA time zone such as Europe/Paris." },
        },
      },
    },
  },
  "the built-in toolbox",
).value;

/** Coded tools of the default toolbox that ship with Axon: looked for after AGENT_TOOL_PATH, as neuro-san does its own. */
export const BUILT_IN_CODED_TOOLS: ReadonlyMap<string, new () => CodedTool> = new Map([[CURRENT_DATE_TIME_CLASS, GetCurrentDateTime]]);
