// The problem list: marks the problems solved in this browser and lists its recent submissions.
import { renderBrowserState } from "./common.js";

renderBrowserState();
