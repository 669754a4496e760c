// The wire names (pydantic serialization aliases) of the request models in the official Python SDK
// (hyperbrowserai/python-sdk, hyperbrowser/models/: session.py CreateSessionParams and CreateSessionProfile,
// scrape.py StartScrapeJobParams and ScrapeOptions, agents/browser_use.py StartBrowserUseTaskParams and
// BrowserUseApiKeys), read with the search tool. PyPI is not reachable here, so this fixture stands in for the package:
// a field the Python SDK sends must be declared by the row's body (test/routing/bodies.test.ts).

const SESSION_OPTIONS = [
  "useUltraStealth", "useStealth", "useProxy", "proxyServer", "proxyServerPassword", "proxyServerUsername", "proxyCountry",
  "proxyState", "proxyCity", "operatingSystems", "device", "platform", "locales", "screen", "screen.width", "screen.height",
  "solveCaptchas", "adblock", "trackers", "annoyances", "enableWebRecording", "enableVideoWebRecording", "enableLogCapture",
  "profile", "profile.id", "profile.persistChanges", "profile.persistNetworkCache", "extensionIds", "staticIpId",
  "acceptCookies", "urlBlocklist", "browserArgs", "saveDownloads", "imageCaptchaParams", "imageCaptchaParams[].imageSelector",
  "imageCaptchaParams[].inputSelector", "timeoutMinutes", "enableWindowManager", "enableWindowManagerTaskbar", "region",
  "viewOnlyLiveView", "allowOnGeolocationPrompt", "disablePasswordManager", "enableAlwaysOpenPdfExternally",
  "appendTimestampToDownloads", "showScrollbars", "liveViewTtlSeconds", "replaceNativeElements", "disablePostQuantumKeyAgreement",
];
const nested = (prefix: string, paths: string[]) => [prefix, ...paths.map((p) => `${prefix}.${p}`)];

export const PYTHON_PARAMS: Record<string, string[]> = {
  "session.create": SESSION_OPTIONS,
  "scrape.start": [
    "url",
    ...nested("sessionOptions", SESSION_OPTIONS),
    ...nested("scrapeOptions", ["formats", "includeTags", "excludeTags", "onlyMainContent", "waitFor", "timeout"]),
  ],
  "task.browser-use.start": [
    "task", "version", "llm", "sessionId", "validateOutput", "useVision", "useVisionForPlanner", "maxActionsPerStep",
    "maxInputTokens", "plannerLlm", "pageExtractionLlm", "plannerInterval", "maxSteps", "maxFailures", "initialActions",
    "sensitiveData", "messageContext", "outputModelSchema", "keepBrowserOpen", "useCustomApiKeys",
    ...nested("sessionOptions", SESSION_OPTIONS),
    ...nested("apiKeys", ["openai", "anthropic", "google"]),
  ],
};
