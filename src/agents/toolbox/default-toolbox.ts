import type { CodedTool } from "../coded-tool.js";
import { GetCurrentDateTime } from "./current-date-time.js";
import { REQUESTS_GET_CLASS } from "./library-tools.js";
import { readToolboxInfo, type Toolbox } from "./toolbox-info.js";

const CURRENT_DATE_TIME_CLASS = "get_current_date_time.GetCurrentDateTime";

const LANGCHAIN_REQUESTS = "langchain_community.tools.requests.tool";

const searchTerms = {
  type: "object",
  properties: { search_terms: { type: "string", description: "What to search the web for." } },
  required: ["search_terms"],
};

/**
 * The toolbox every network starts from; AGENT_TOOLBOX_INFO_FILE and a network's `toolbox_info_file` extend it. It
 * names every tool neuro-san's default toolbox has named (and the studio's google_serper), of the same kind, so that
 * Connectivity shows the same `display_as`. Axon implements `requests_get` and `get_current_date_time`; the other
 * LangChain classes run in the Python workers when AXON_PYTHON has their package, and the Python coded tools from
 * AGENT_TOOL_PATH when found.
 */
export const DEFAULT_TOOLBOX: Toolbox = readToolboxInfo(
  {
    // LangChain tools. Fetches only what `allowed_urls` (in the entry's or the agent's args) lets it.
    requests_get: { class: REQUESTS_GET_CLASS },
    requests_post: { class: `${LANGCHAIN_REQUESTS}.RequestsPostTool` },
    requests_patch: { class: `${LANGCHAIN_REQUESTS}.RequestsPatchTool` },
    requests_put: { class: `${LANGCHAIN_REQUESTS}.RequestsPutTool` },
    requests_delete: { class: `${LANGCHAIN_REQUESTS}.RequestsDeleteTool` },
    requests_toolkit: { class: "langchain_community.agent_toolkits.openapi.toolkit.RequestsToolkit" },
    tavily_search: { class: "langchain_community.tools.tavily_search.TavilySearchResults", args: { max_results: 5 } },
    bing_search: { class: "langchain_community.tools.bing_search.BingSearchResults" },
    // Coded tools.
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
    website_search: { class: "web_search.WebSearch", description: "Searches the web and returns pages that match.", parameters: searchTerms },
    brave_search: { class: "tools.brave_search.BraveSearch", description: "Searches the web with Brave Search.", parameters: searchTerms },
    ddgs_search: { class: "tools.ddgs_search.DdgsSearch", description: "Searches the web with DuckDuckGo.", parameters: searchTerms },
    google_serper: {
      class: "coded_tools.tools.google_serper.GoogleSerper",
      description: "Searches Google through the Serper API: web pages, news, images or places.",
      parameters: {
        type: "object",
        properties: {
          query: { type: "string", description: "What to search for." },
          type: { type: "string", description: "search (the default), news, images or places." },
        },
        required: ["query"],
      },
    },
    rag_retriever: {
      class: "rag.Rag",
      description: "Answers a query from the content of the given web pages.",
      parameters: {
        type: "object",
        properties: {
          urls: { type: "array", items: { type: "string" }, description: "The pages to read." },
          query: { type: "string", description: "What to find in them." },
        },
        required: ["urls", "query"],
      },
    },
  },
  "the built-in toolbox",
).value;

/** Coded tools of the default toolbox that ship with Axon: looked for after AGENT_TOOL_PATH, as neuro-san does its own. */
export const BUILT_IN_CODED_TOOLS: ReadonlyMap<string, new () => CodedTool> = new Map([[CURRENT_DATE_TIME_CLASS, GetCurrentDateTime]]);
