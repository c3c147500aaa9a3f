import { createHash } from 'node:crypto';
import { CONSOLE_SCRIPT } from './console-script.js';

const STYLE = `
*{box-sizing:border-box}body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2433;background:#f6f7f9}
header{display:flex;gap:14px;align-items:center;flex-wrap:wrap;background:#1d2433;color:#fff;padding:12px 24px}
header h1{margin:0;font-size:19px}header small{color:#aab3c5;font-weight:400;margin-left:6px}.grow{flex:1}
header label{color:#c8cedb}main{padding:12px 24px 32px;max-width:1400px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde1e8;margin:6px 0}
th,td{padding:5px 10px;text-align:left;border-bottom:1px solid #eceef2;vertical-align:top}
th{background:#eef0f4;font-weight:600;font-size:12px;text-transform:uppercase;color:#4a5366}
td{font-variant-numeric:tabular-nums;overflow-wrap:anywhere}tr.selected td{background:#eaf1fd}
tr.paused td:last-child{color:#a05a00;font-weight:600}
section{background:#fff;border:1px solid #dde1e8;border-radius:6px;padding:10px 16px;margin:14px 0}
h2{margin:4px 0 8px;font-size:17px}h3{margin:16px 0 6px;font-size:15px}
button{font:inherit;padding:3px 12px;border:1px solid #a9b2c3;border-radius:4px;background:#fff;cursor:pointer}
button:hover{background:#eef3fb}button:disabled{opacity:.5;cursor:default}
button.link{border:0;background:none;padding:0;color:#2a5db0;text-decoration:underline;text-align:left}
button.cancel{padding:1px 8px;font-size:12px;color:#a4262c;border-color:#e0a8ab}
.bar{display:flex;gap:8px;align-items:center;margin:6px 0}
.tabs{display:flex;gap:4px;margin:12px 0 0}.tab[aria-selected=true]{background:#1d2433;color:#fff;border-color:#1d2433}
.badge{display:inline-block;padding:1px 9px;border-radius:10px;font-size:12px;font-weight:600;background:#dfe3ea;color:#1d2433}
.badge.ready{background:#2f7d4f;color:#fff}.badge.degraded,.badge.paused{background:#c27c0e;color:#fff}
.badge.stopping,.badge.stopped{background:#8a93a6;color:#fff}
#message{padding:8px 12px;border-radius:4px;background:#eaf1fd;margin:0 0 10px}#message.error{background:#fde8e8;color:#8a1c21}
#message.ok{background:#e6f4ea;color:#1e5631}
input{font:inherit;padding:2px 6px;border:1px solid #a9b2c3;border-radius:4px}
form{display:flex;gap:10px;align-items:center;flex-wrap:wrap;margin:8px 0}
pre{background:#f3f5f8;padding:8px;border-radius:4px;overflow:auto;font-size:12px}
.value{font-family:ui-monospace,monospace;font-size:12px}.note{color:#5b6477}
[hidden]{display:none!important}`;

const sha256 = (text: string): string => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The console page's Content-Security-Policy: its one inline script and its one inline style, by their
 * hashes, and requests to its own origin only; nothing else loads, the page cannot be framed, and Trusted
 * Types with no policy keep any string from an HTML sink.
 */
export const PAGE_POLICY = [
  "default-src 'none'",
  `script-src ${sha256(CONSOLE_SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "require-trusted-types-for 'script'",
  "trusted-types 'none'",
].join('; ');

const RUN_TABS = ['gathering', 'waiting', 'running']
  .map(
    (s) =>
      `<button type="button" class="tab" role="tab" data-stage="${s}">${s[0]!.toUpperCase()}${s.slice(1)}</button>`,
  )
  .join('');

/**
 * The console page: the same for every app (what it shows comes from the JSON API), so it holds no data of
 * the app's, and its hashes are fixed.
 */
export const CONSOLE_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sluice console</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="referrer" content="no-referrer">
<style>${STYLE}</style></head>
<body><header><h1><span id="app">…</span><small>Sluice console</small></h1><span id="status" class="badge"></span>
<span class="grow"></span>
<label>Token <input id="token" type="password" autocomplete="off" spellcheck="false" size="18"></label>
<button id="refresh" type="button">Refresh</button>
<label><input id="auto" type="checkbox" checked> refresh every 5 s</label></header>
<main><p id="message" role="status" hidden></p>
<p id="actions-off" class="note" hidden>Actions are off: the app has no <code>http.console.token</code>.</p>
<table id="subscribers"><thead><tr><th>Subscriber</th><th>Topic</th><th>Partitions</th><th>Lag</th><th>In flight</th>
<th>Dead letters</th><th>Pace</th><th>Paused</th></tr></thead><tbody></tbody></table>
<p id="empty" class="note" hidden>No subscriber is running.</p>
<section id="detail" hidden><h2 id="detail-name"></h2>
<div id="pace" hidden><div class="bar"><button id="pause" type="button">Pause</button>
<button id="resume" type="button">Resume</button><span id="pace-state" class="badge"></span></div>
<table id="shards"><thead><tr><th>Shard</th><th>Paused</th><th>Open windows</th><th>Waiting starts</th>
<th>Keys running</th><th>Parked keys</th></tr></thead><tbody></tbody></table>
<div class="tabs" role="tablist">${RUN_TABS}</div>
<table id="runs"><thead><tr><th>Run</th><th>Key</th><th>Shard</th><th>Events</th><th>Order</th><th>When</th>
<th>Waiting for</th><th></th></tr></thead><tbody></tbody></table>
<div class="bar"><button id="runs-next" type="button" hidden>Next page</button><span id="runs-note" class="note"></span></div>
<form id="key-form"><label>Key <input id="key" autocomplete="off" spellcheck="false" size="24"></label>
<button type="submit">Look up</button></form><pre id="key-result" hidden></pre></div>
<div id="dead" hidden><h3>Dead letters on <code id="dead-topic"></code></h3>
<form id="letters-form"><label>Partition <input id="letters-partition" inputmode="numeric" size="4"></label>
<button type="submit">Show</button></form>
<table id="letters"><thead><tr><th>Partition</th><th>Offset</th><th>Key</th><th>Reason</th><th>From</th><th>When</th>
<th>Value</th><th>Replayed</th></tr></thead><tbody></tbody></table>
<div class="bar"><button id="letters-next" type="button" hidden>Next page</button><span id="letters-note" class="note"></span></div>
<form id="replay-form"><label>Partition <input name="partition" inputmode="numeric" size="4"></label>
<label>From offset <input name="fromOffset" inputmode="numeric" size="8"></label>
<label>To offset <input name="toOffset" inputmode="numeric" size="8"></label>
<label>Limit <input name="limit" inputmode="numeric" size="6"></label>
<button id="replay" type="submit">Replay</button></form><p id="replay-result" role="status"></p></div>
</section></main>
<script>${CONSOLE_SCRIPT}</script>
</body></html>
`;
