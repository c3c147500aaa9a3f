/**
 * The console page's script, inlined in the page (its hash is in the page's Content-Security-Policy). Plain
 * browser JavaScript, no build step. Every text it shows goes into the DOM as text (`textContent`, text
 * nodes): names of subscribers, keys, reasons and values are the app's data, and may be hostile. The policy
 * also requires Trusted Types with no policy, so a string can never reach an HTML sink.
 *
 * It holds no backtick and no `${`: it is a template literal here.
 */
export const CONSOLE_SCRIPT = String.raw`
'use strict';
(function () {
  var $ = function (id) { return document.getElementById(id); };
  var TOKEN = 'sluice-console-token';
  var SELECTED = 'sluice-console-subscriber';
  var STATUSES = ['starting', 'ready', 'degraded', 'stopping', 'stopped'];
  var state = { data: null, selected: sessionStorage.getItem(SELECTED), stage: 'gathering', busy: false };
  var token = $('token');
  token.value = sessionStorage.getItem(TOKEN) || '';
  token.addEventListener('input', function () { sessionStorage.setItem(TOKEN, token.value); });

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function button(text, onClick, cls) {
    var b = el('button', text, cls);
    b.type = 'button';
    b.addEventListener('click', onClick);
    return b;
  }
  function row(cells) {
    var tr = document.createElement('tr');
    cells.forEach(function (c) {
      var td = document.createElement('td');
      if (c instanceof Node) td.append(c);
      else td.textContent = c === undefined || c === null ? '' : String(c);
      tr.append(td);
    });
    return tr;
  }
  function time(ms) {
    return typeof ms === 'number' ? new Date(ms).toISOString().replace('T', ' ').replace('Z', '') : '';
  }
  function say(text, kind) {
    var m = $('message');
    m.textContent = text || '';
    m.className = kind || '';
    m.hidden = !text;
  }

  function call(path, init) {
    return fetch(path, init).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (body) {
        if (res.ok) return body;
        throw new Error(body && body.message ? body.code + ': ' + body.message : 'HTTP ' + res.status);
      });
    }, function (e) { throw new Error('the request failed: ' + e.message); });
  }
  function get(name, params) {
    var q = new URLSearchParams();
    Object.keys(params || {}).forEach(function (k) {
      var v = params[k];
      if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    });
    var s = q.toString();
    return call('/console/api/' + name + (s ? '?' + s : ''), { headers: { accept: 'application/json' } });
  }
  function act(name, body) {
    var headers = { 'content-type': 'application/json' };
    if (token.value) headers.authorization = 'Bearer ' + token.value;
    return call('/console/api/' + name, { method: 'POST', headers: headers, body: JSON.stringify(body) });
  }
  function current() {
    var d = state.data;
    return d ? d.subscribers.find(function (s) { return s.name === state.selected; }) : undefined;
  }

  function deadText(c) {
    var n = c.published + c.stripped;
    var more = [];
    if (c.lost) more.push(c.lost + ' lost');
    if (c.dropped) more.push(c.dropped + ' dropped');
    return more.length ? n + ' (' + more.join(', ') + ')' : String(n);
  }
  function renderOverview() {
    var d = state.data;
    document.title = d.app + ' · Sluice console';
    $('app').textContent = d.app;
    var status = $('status');
    status.textContent = d.status;
    status.className = 'badge ' + (STATUSES.indexOf(d.status) >= 0 ? d.status : '');
    $('actions-off').hidden = d.console.actions;
    $('subscribers').tBodies[0].replaceChildren.apply($('subscribers').tBodies[0], d.subscribers.map(function (s) {
      var tr = row([
        button(s.name, function () { select(s.name); }, 'link'),
        s.topic,
        s.assignedPartitions.join(', '),
        s.lag + (s.lagStale ? ' (stale)' : ''),
        s.inFlight,
        deadText(s.deadLetters),
        s.pace ? s.pace.kind : '',
        s.pace ? (s.pace.paused ? 'paused' : 'no') : '',
      ]);
      if (s.name === state.selected) tr.className = 'selected';
      if (s.pace && s.pace.paused) tr.classList.add('paused');
      return tr;
    }));
    $('empty').hidden = d.subscribers.length > 0;
    renderDetail();
  }
  function renderDetail() {
    var s = current();
    $('detail').hidden = !s;
    if (!s) return;
    $('detail-name').textContent = s.name;
    $('pace').hidden = !s.pace;
    if (s.pace) {
      $('pace-state').textContent = s.pace.paused ? 'paused' : 'not paused';
      $('pace-state').className = s.pace.paused ? 'badge paused' : 'badge';
      var body = $('shards').tBodies[0];
      body.replaceChildren.apply(body, s.pace.shards.map(function (x) {
        return row([x.shard, x.paused ? 'paused' : 'no', x.openWindows, x.waitingStarts, x.keysRunning, x.parkedKeys]);
      }));
    }
    $('dead').hidden = s.deadLetterTopic === false;
    if (s.deadLetterTopic !== false) $('dead-topic').textContent = s.deadLetterTopic;
  }

  function loadOverview() {
    return get('inspect').then(function (d) {
      state.data = d;
      if (!current() && d.subscribers.length > 0) state.selected = d.subscribers[0].name;
      renderOverview();
    });
  }
  function loadRuns(after) {
    var s = current();
    if (!s || !s.pace) return Promise.resolve();
    var stage = state.stage;
    var seq = state.runsSeq = (state.runsSeq || 0) + 1; // an answer to an older request is dropped
    return get('runs', { subscriber: s.name, stage: stage, after: after, limit: 50 }).then(function (page) {
      if (seq !== state.runsSeq) return;
      var body = $('runs').tBodies[0];
      var rows = page.runs.map(function (r) {
        var when = r.stage === 'gathering' ? 'closes ' + time(r.closesAt) : r.stage === 'running' ? 'started ' + time(r.startedAt) : '';
        var cancel = r.stage === 'running' ? '' : button('Cancel', function (e) { cancelRun(s.name, r.runId, e.target); }, 'cancel');
        return row([r.runId, r.key, r.shard, r.events, r.order, when, r.waitingFor || '', cancel]);
      });
      if (after === undefined) body.replaceChildren.apply(body, rows);
      else body.append.apply(body, rows);
      state.runsNext = page.next;
      $('runs-next').hidden = !page.next;
      $('runs-note').textContent = body.rows.length === 0 ? 'No run is ' + stage + '.' : body.rows.length + ' ' + stage + ' shown' + (page.next ? ', more on the next page' : '');
    });
  }
  function loadLetters(after) {
    var s = current();
    if (!s || $('dead').hidden) return Promise.resolve();
    var partition = $('letters-partition').value.trim();
    var seq = state.lettersSeq = (state.lettersSeq || 0) + 1;
    return get('dead-letters', { subscriber: s.name, partition: partition, after: after, limit: 50 }).then(function (page) {
      if (seq !== state.lettersSeq) return;
      var body = $('letters').tBodies[0];
      var rows = page.letters.map(function (l) {
        var from = l.sourceTopic + (l.sourcePartition !== undefined ? ' ' + l.sourcePartition + '@' + (l.sourceOffset || '?') : '');
        var value = el('span', l.value.length > 120 ? l.value.slice(0, 120) + '…' : l.value, 'value');
        value.title = l.value;
        return row([l.partition, l.offset, l.key === undefined ? '' : l.key, l.reason, from, time(l.timestamp), value, l.replayed ? 'yes' : l.stripped ? 'stripped' : 'no']);
      });
      if (after === undefined) body.replaceChildren.apply(body, rows);
      else body.append.apply(body, rows);
      state.lettersNext = page.next;
      $('letters-next').hidden = !page.next;
      $('letters-note').textContent = body.rows.length === 0 ? 'No dead letter.' : body.rows.length + ' shown' + (page.next ? ', more on the next page' : '');
    });
  }
  function fail(e) { say(e.message, 'error'); }
  function refresh() {
    return loadOverview().then(function () { return Promise.all([loadRuns(), loadLetters()]); }).catch(fail);
  }
  function select(name) {
    state.selected = name;
    sessionStorage.setItem(SELECTED, name);
    $('key-result').hidden = true;
    $('replay-result').textContent = '';
    renderOverview();
    Promise.all([loadRuns(), loadLetters()]).catch(fail);
  }
  function markStage(stage) {
    state.stage = stage;
    document.querySelectorAll('.tab').forEach(function (t) {
      t.setAttribute('aria-selected', String(t.getAttribute('data-stage') === stage));
    });
  }
  function showStage(stage) {
    markStage(stage);
    loadOverview().then(function () { return loadRuns(); }).catch(fail); // the shards' counts with the runs
  }

  function pauseOrResume(what) {
    var s = current();
    if (!s) return;
    say('');
    act(what, { subscriber: s.name }).then(function (out) {
      var n = out.shards.length;
      say((what === 'pause' ? 'Paused ' : 'Resumed ') + s.name + ' (' + n + ' shard' + (n === 1 ? '' : 's') + ' changed).', 'ok');
    }, fail).then(refresh);
  }
  function cancelRun(subscriber, runId, b) {
    if (!window.confirm('Cancel run ' + runId + '? It never runs, and its events are dropped.')) return;
    b.disabled = true;
    act('cancel', { subscriber: subscriber, runId: runId }).then(function (out) {
      say(out.cancelled ? 'Cancelled ' + runId + ' (its ' + out.cancelled + ').' : runId + ' had started, or is gone: nothing was cancelled.', 'ok');
    }, fail).then(refresh);
  }

  $('refresh').addEventListener('click', function () { say(''); refresh(); });
  $('pause').addEventListener('click', function () { pauseOrResume('pause'); });
  $('resume').addEventListener('click', function () { pauseOrResume('resume'); });
  $('runs-next').addEventListener('click', function () { loadRuns(state.runsNext).catch(fail); });
  $('letters-next').addEventListener('click', function () { loadLetters(state.lettersNext).catch(fail); });
  document.querySelectorAll('.tab').forEach(function (t) {
    t.addEventListener('click', function () { showStage(t.getAttribute('data-stage')); });
  });
  $('key-form').addEventListener('submit', function (e) {
    e.preventDefault();
    var s = current();
    if (!s) return;
    get('key', { subscriber: s.name, key: $('key').value }).then(function (out) {
      var pre = $('key-result');
      pre.textContent = out.key === null ? 'Nothing is held for this key.' : JSON.stringify(out.key, null, 2);
      pre.hidden = false;
    }, fail);
  });
  $('letters-form').addEventListener('submit', function (e) {
    e.preventDefault();
    loadLetters().catch(fail);
  });
  $('replay-form').addEventListener('submit', function (e) {
    e.preventDefault();
    var s = current();
    if (!s) return;
    var f = e.target.elements;
    var body = { subscriber: s.name };
    ['partition', 'fromOffset', 'toOffset', 'limit'].forEach(function (k) {
      var v = f[k].value.trim();
      if (v !== '') body[k] = v;
    });
    var result = $('replay-result');
    var submit = $('replay');
    result.textContent = 'Replaying…';
    submit.disabled = true;
    act('replay', body).then(function (r) {
      result.textContent = 'Replayed ' + r.replayed + ', skipped ' + r.skipped + ' (replayed before)' +
        (r.unreplayable ? ', ' + r.unreplayable + ' cannot be (sent stripped)' : '') + ', read ' + r.scanned + '.';
    }, function (err) { result.textContent = err.message; }).then(function () {
      submit.disabled = false;
      return refresh();
    });
  });
  setInterval(function () {
    if (!$('auto').checked || document.hidden || state.busy) return;
    state.busy = true;
    loadOverview().catch(fail).then(function () { state.busy = false; });
  }, 5000);
  markStage('gathering');
  refresh();
})();
`;
