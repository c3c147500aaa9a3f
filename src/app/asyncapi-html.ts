import type { AsyncApiDocument } from './asyncapi.js';

type Json = Record<string, unknown>;

/** `text` safe inside HTML text and attribute values. */
const esc = (text: unknown): string => String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The last segment of a `$ref` (`#/channels/orders` → `orders`). */
const target = (ref: unknown): string => {
  const path = (ref as { $ref?: unknown } | undefined)?.$ref;
  return typeof path === 'string' ? path.slice(path.lastIndexOf('/') + 1) : '';
};

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2433;background:#f6f7f9}
header{background:#1d2433;color:#fff;padding:20px 32px}header h1{margin:0;font-size:24px}
header p{margin:4px 0 0;color:#c8cedb}main{padding:8px 32px 32px;max-width:1100px}
h2{margin:28px 0 8px;font-size:18px}section{background:#fff;border:1px solid #dde1e8;border-radius:6px;
padding:12px 16px;margin:8px 0}.op{display:inline-block;min-width:64px;text-align:center;border-radius:4px;
padding:1px 8px;margin-right:8px;font-size:12px;font-weight:600;text-transform:uppercase;color:#fff}
.receive{background:#2f7d4f}.send{background:#2a5db0}code{background:#eef0f4;padding:1px 5px;border-radius:3px}
table{border-collapse:collapse;margin-top:6px}td{padding:2px 12px 2px 0;vertical-align:top}
td:first-child{color:#5b6477}pre{background:#f3f5f8;padding:8px;border-radius:4px;overflow:auto;font-size:13px}`;

/**
 * A page a person reads: the document's title and description, its servers, its operations (each with its
 * channel, its Kafka group, what `x-sluice-subscriber` says of it, its reply), and its channels with their
 * messages' payload schemas. Plain HTML and CSS, with nothing to run: every name in it is escaped.
 */
export function asyncApiHtml(doc: AsyncApiDocument): string {
  const info = (doc.info ?? {}) as Json;
  const servers = Object.entries((doc.servers ?? {}) as Record<string, Json>);
  const channels = (doc.channels ?? {}) as Record<string, Json>;
  const operations = Object.entries((doc.operations ?? {}) as Record<string, Json>);
  const title = esc(info.title ?? 'app');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${title} · AsyncAPI</title>
<meta name="viewport" content="width=device-width,initial-scale=1"><style>${STYLE}</style></head>
<body><header><h1>${title} <small>${esc(info.version ?? '')}</small></h1>
${info.description === undefined ? '' : `<p>${esc(info.description)}</p>`}
<p>AsyncAPI ${esc(doc.asyncapi)}</p></header><main>
<h2>Servers</h2>${servers.map(([id, s]) => `<section id="server-${esc(id)}"><b>${esc(id)}</b> <code>${esc(s.protocol)}://${esc(s.host)}</code></section>`).join('')}
<h2>Operations</h2>${operations.map(([id, op]) => operationHtml(id, op, channels)).join('')}
<h2>Channels</h2>${Object.entries(channels)
    .map(([id, c]) => channelHtml(id, c))
    .join('')}
</main></body></html>
`;
}

function operationHtml(id: string, op: Json, channels: Record<string, Json>): string {
  const channel = target(op.channel);
  const address = channels[channel]?.address;
  const sluice = op['x-sluice-subscriber'] as Json | undefined;
  const group = ((op.bindings as Json | undefined)?.kafka as { groupId?: { enum?: unknown[] } } | undefined)?.groupId
    ?.enum?.[0];
  const rows: [string, string][] = [];
  if (group !== undefined) rows.push(['group', `<code>${esc(group)}</code>`]);
  if (sluice !== undefined) {
    const n = Number(sluice.workers);
    const unit = sluice.concurrency === 'lanes' ? 'lane' : 'worker';
    rows.push(['concurrency', `${n} ${unit}${n === 1 ? '' : 's'}${unit === 'lane' ? ' by key' : ''}`]);
    const retry = sluice.retry as Json;
    rows.push(['retry', `${esc(retry.attempts)} attempts, backoff ${esc(retry.initialMs)}–${esc(retry.maxMs)} ms`]);
    rows.push(['dead letters', sluice.deadLetter === false ? 'dropped' : `<code>${esc(sluice.deadLetter)}</code>`]);
    if (sluice.pace !== undefined) rows.push(['pace', `<code>${esc(JSON.stringify(sluice.pace))}</code>`]);
    if (sluice.exactlyOnce === true) rows.push(['exactly once', 'its publishes commit with its input offsets']);
  }
  const reply = op.reply as Json | undefined;
  if (reply !== undefined) rows.push(['replies on', `<code>${esc(target(reply.channel))}</code>`]);
  const action = op.action === 'receive' ? 'receive' : 'send';
  return `<section id="operation-${esc(id)}"><span class="op ${action}">${action}</span><b>${esc(id)}</b>
 on <a href="#channel-${esc(channel)}"><code>${esc(address ?? channel)}</code></a>
<div>${esc(op.summary ?? '')}</div>${rows.length === 0 ? '' : `<table>${rows.map(([k, v]) => `<tr><td>${k}</td><td>${v}</td></tr>`).join('')}</table>`}</section>`;
}

function channelHtml(id: string, channel: Json): string {
  const messages = Object.entries((channel.messages ?? {}) as Record<string, Json>);
  const address = channel.address === null ? '(the address a request names)' : channel.address;
  return `<section id="channel-${esc(id)}"><b><code>${esc(address)}</code></b>${messages
    .map(([name, m]) => {
      const shown = m.payload ?? m.headers;
      const what = m.payload !== undefined ? 'payload' : m.headers !== undefined ? 'headers' : 'any JSON';
      return `<div>${esc(m.title ?? name)} — ${what}</div>${shown === undefined ? '' : `<pre>${esc(JSON.stringify(shown, null, 2))}</pre>`}`;
    })
    .join('')}</section>`;
}
