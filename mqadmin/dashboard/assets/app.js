// The console's page: a hash router over the JSON API (/api/...). Server
// data reaches the DOM as text nodes and attributes only, never as markup.

const main = document.getElementById('main');
let csrf = '';

// el builds an element: el('td', {class: 'num'}, 'text', child, ...).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function link(hash, text) { return el('a', { href: hash }, text); }
function num(v) { return el('td', { class: 'num' }, v === undefined || v === null ? '' : String(v)); }
function time(ms) { return ms > 0 ? new Date(ms).toLocaleString() : '-'; }
function fixed(v, d) { return typeof v === 'number' ? v.toFixed(d) : ''; }
function enc(s) { return encodeURIComponent(s); }

// table: headers and rows of cells (a cell is text, a number or a <td>).
function table(headers, rows, attrs) {
  return el('table', attrs || {},
    el('thead', {}, el('tr', {}, headers.map(h => el('th', {}, h)))),
    el('tbody', {}, rows.map(r => el('tr', {}, r.map(c =>
      c instanceof HTMLElement && c.tagName === 'TD' ? c : typeof c === 'number' ? num(c) : el('td', {}, c))))));
}

class ApiError extends Error {
  constructor(msg, status, needCredentials) { super(msg); this.status = status; this.needCredentials = needCredentials; }
}

async function call(method, path, body) {
  const opts = { method, headers: {}, credentials: 'same-origin' };
  if (body !== undefined) {
    opts.headers['Content-Type'] = 'application/json';
    opts.headers['X-CSRF-Token'] = csrf;
    opts.body = JSON.stringify(body);
  }
  const resp = await fetch(path, opts);
  let data = {};
  try { data = await resp.json(); } catch (e) { /* not JSON */ }
  if (!resp.ok) throw new ApiError(data.error || resp.statusText, resp.status, !!data.needCredentials);
  return data;
}
const get = (path) => call('GET', path);
const post = (path, body) => call('POST', path, body);

// confirmAction shows the confirmation dialog; resolves to true on Confirm.
function confirmAction(text) {
  const d = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = text;
  return new Promise(resolve => {
    d.addEventListener('close', () => resolve(d.returnValue === 'ok'), { once: true });
    d.returnValue = '';
    d.showModal();
  });
}

// askCredentials shows the sign-in dialog; resolves true once signed in.
function askCredentials(reason) {
  const d = document.getElementById('login');
  if (d.open) return new Promise(resolve => d.addEventListener('close', () => resolve(false), { once: true }));
  const errEl = document.getElementById('login-error');
  errEl.textContent = reason || '';
  return new Promise(resolve => {
    const onClose = async () => {
      if (d.returnValue !== 'ok') { resolve(false); return; }
      try {
        await post('/api/login', { accessKey: document.getElementById('login-ak').value, secretKey: document.getElementById('login-sk').value });
        document.getElementById('login-sk').value = '';
        await refreshSession();
        resolve(true);
      } catch (e) {
        errEl.textContent = e.message;
        d.returnValue = '';
        d.addEventListener('close', onClose, { once: true });
        d.showModal();
      }
    };
    d.addEventListener('close', onClose, { once: true });
    d.returnValue = '';
    d.showModal();
  });
}

async function refreshSession() {
  const s = await get('/api/session');
  csrf = s.csrf;
  const who = document.getElementById('who');
  who.replaceChildren('nameserver ' + (s.nameServers || []).join(';'));
  if (s.accessKey) {
    who.append(' · signed in as ' + s.accessKey,
      el('button', { id: 'logout', onclick: async () => { await post('/api/logout', {}); await refreshSession(); route(); } }, 'Sign out'));
  } else if (s.serverSigned) {
    who.append(' · signed with mqadmin credentials');
  }
}

// ---- pages ----

function actionResult(box, p) {
  return p.then(r => { box.className = 'ok'; box.textContent = 'Done: ' + JSON.stringify(r); return r; })
    .catch(e => { box.className = 'error'; box.textContent = e.message; if (e.needCredentials) askCredentials(e.message); });
}

async function pageCluster() {
  const d = await get('/api/cluster');
  const rows = d.brokers.map(b => [b.cluster, b.brokerName, num(b.brokerId), b.role, b.addr, b.version || '',
    num(fixed(b.inTps, 2)), num(fixed(b.outTps, 2)), num(fixed(b.diskRatio, 4)), num(fixed(b.hours, 2)),
    String(b.activated), b.error ? el('td', { class: 'error' }, b.error) : '']);
  const clusterSel = () => el('select', { name: 'cluster' }, d.clusters.map(c => el('option', { value: c }, c)));
  const topicBox = el('p', {}), groupBox = el('p', {});
  const topicForm = el('form', { class: 'inline', id: 'create-topic' },
    el('label', {}, 'Cluster', clusterSel()),
    el('label', {}, 'Topic', el('input', { name: 'topic', required: true })),
    el('label', {}, 'Read queues', el('input', { name: 'read', type: 'number', value: 8, min: 1 })),
    el('label', {}, 'Write queues', el('input', { name: 'write', type: 'number', value: 8, min: 1 })),
    el('button', { type: 'submit' }, 'Create topic'));
  topicForm.addEventListener('submit', async ev => {
    ev.preventDefault();
    const f = new FormData(topicForm);
    const body = { cluster: f.get('cluster'), topic: f.get('topic'), readQueues: +f.get('read'), writeQueues: +f.get('write') };
    if (!await confirmAction(`Create topic ${body.topic} in cluster ${body.cluster} (${body.readQueues}/${body.writeQueues} queues)?`)) return;
    actionResult(topicBox, post('/api/topic', body));
  });
  const groupForm = el('form', { class: 'inline', id: 'create-group' },
    el('label', {}, 'Cluster', clusterSel()),
    el('label', {}, 'Consumer group', el('input', { name: 'group', required: true })),
    el('button', { type: 'submit' }, 'Create group'));
  groupForm.addEventListener('submit', async ev => {
    ev.preventDefault();
    const f = new FormData(groupForm);
    const body = { cluster: f.get('cluster'), group: f.get('group') };
    if (!await confirmAction(`Create consumer group ${body.group} in cluster ${body.cluster}?`)) return;
    actionResult(groupBox, post('/api/group', body));
  });
  return [el('h2', {}, 'Cluster'),
    el('p', { class: 'muted' }, 'Name servers: ' + d.nameServers.join(';')),
    table(['Cluster', 'Broker', 'BID', 'Role', 'Address', 'Version', 'In TPS', 'Out TPS', 'Disk ratio', 'Hours', 'Active', 'Error'], rows, { id: 'brokers' }),
    el('h3', {}, 'Create topic'), topicForm, topicBox,
    el('h3', {}, 'Create consumer group'), groupForm, groupBox];
}

async function pageTopics() {
  const d = await get('/api/topics');
  const filter = el('input', { placeholder: 'filter', id: 'topic-filter' });
  const showSys = el('input', { type: 'checkbox', id: 'show-system' });
  const box = el('div');
  const render = () => {
    const f = filter.value.toLowerCase();
    const rows = d.topics.filter(t => (showSys.checked || t.kind === 'NORMAL') && t.name.toLowerCase().includes(f))
      .map(t => [el('td', {}, link('#/topic/' + enc(t.name), t.name)), t.kind]);
    box.replaceChildren(table(['Topic', 'Kind'], rows, { id: 'topics' }), el('p', { class: 'muted' }, `${rows.length} of ${d.topics.length} topics`));
  };
  filter.addEventListener('input', render);
  showSys.addEventListener('change', render);
  render();
  return [el('h2', {}, 'Topics'), el('form', { class: 'inline' }, el('label', {}, 'Filter', filter), el('label', {}, 'System, retry, DLQ', showSys)), box];
}

async function pageTopic(name) {
  const d = await get('/api/topic?topic=' + enc(name));
  const out = [el('h2', {}, 'Topic ' + d.topic)];
  const r = d.route || {};
  out.push(el('h3', {}, 'Route'),
    table(['Broker', 'Cluster', 'Addresses'], (r.brokerDatas || []).map(b =>
      [b.brokerName, b.cluster, Object.entries(b.brokerAddrs || {}).map(([id, a]) => id + '=' + a).join(' ')]), { id: 'route-brokers' }),
    table(['Broker', 'Read queues', 'Write queues', 'Perm', 'Sys flag'], (r.queueDatas || []).map(q =>
      [q.brokerName, q.readQueueNums, q.writeQueueNums, q.perm, q.topicSysFlag]), { id: 'route-queues' }));
  out.push(el('h3', {}, 'Queue offsets'));
  if (d.statsError) out.push(el('p', { class: 'error' }, d.statsError));
  out.push(table(['Broker', 'Queue', 'Min offset', 'Max offset', 'Last update'], d.queues.map(q =>
    [q.brokerName, q.queueId, q.minOffset, q.maxOffset, time(q.lastUpdateTimestamp)]), { id: 'queue-offsets' }));
  out.push(el('h3', {}, 'Consumer groups'),
    d.groups.length ? el('ul', { id: 'topic-groups' }, d.groups.map(g => el('li', {}, link('#/group/' + enc(g), g)))) : el('p', { class: 'muted' }, 'none'));
  if (d.static) {
    const s = d.static;
    out.push(el('h3', {}, `Static topic: ${s.totalQueues} logic queues`),
      table(['Broker', 'Epoch', 'Read/Write'], s.brokers.map(b => [b.broker, b.epoch, b.readQueueNums + '/' + b.writeQueueNums]), { id: 'static-brokers' }));
    const rows = [];
    for (const q of s.queues) {
      for (const it of q.items || []) {
        rows.push([q.logicQueue, q.leader, it.gen, it.bname, it.queueId, it.logicOffset, it.startOffset, it.endOffset, time(it.timeOfStart), time(it.timeOfEnd)]);
      }
    }
    out.push(table(['Logic queue', 'Leader', 'Gen', 'Broker', 'Queue', 'Logic offset', 'Start', 'End', 'Start time', 'End time'], rows, { id: 'static-mapping' }));
    if (s.missing.length) out.push(el('p', { class: 'error' }, 'Logic queues without leader: ' + s.missing.join(', ')));
    for (const w of s.warnings) out.push(el('p', { class: 'error' }, 'Interrupted change: ' + w));
  }
  return out;
}

async function pageGroups(params) {
  const filter = params.get('filter') || '', offset = +(params.get('offset') || 0), limit = params.get('limit') || '100';
  const d = await get('/api/groups?' + new URLSearchParams({ filter, offset, limit }));
  const form = el('form', { class: 'inline', id: 'group-filter' },
    el('label', {}, 'Name contains', el('input', { name: 'filter', value: filter })),
    el('button', { type: 'submit' }, 'Filter'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    location.hash = '#/groups?' + new URLSearchParams(new FormData(form));
  });
  const at = o => link('#/groups?' + new URLSearchParams({ filter, offset: o, limit }), o < d.offset ? '← Previous page' : 'Next page →');
  const first = d.groups.length ? d.offset + 1 : 0;
  return [el('h2', {}, 'Consumer groups'), form,
    table(['Group', 'Clients', 'Version', 'Type', 'Model', 'TPS', 'Lag'], d.groups.map(g =>
      [el('td', {}, link('#/group/' + enc(g.group), g.group)), g.count, g.version, g.consumeType, g.messageModel, g.consumeTps, g.diffTotal]), { id: 'groups' }),
    el('p', { class: 'muted', id: 'groups-count' }, `groups ${first}–${d.offset + d.groups.length} of ${d.total}`),
    el('p', {}, d.offset > 0 ? at(Math.max(0, d.offset - d.limit)) : '', ' ', d.offset + d.groups.length < d.total ? at(d.offset + d.limit) : '')];
}

async function pageGroup(name) {
  const d = await get('/api/group?group=' + enc(name));
  const out = [el('h2', {}, 'Consumer group ' + d.group)];
  const p = d.progress;
  if (d.progressError) out.push(el('p', { class: 'error' }, d.progressError));
  const topics = new Set();
  if (p) {
    out.push(el('div', { class: 'cards' },
      el('div', { class: 'card', id: 'lag-total' }, 'Lag', el('b', {}, String(p.diffTotal))),
      el('div', { class: 'card' }, 'Inflight', el('b', {}, String(p.inflightTotal))),
      el('div', { class: 'card' }, 'Consume TPS', el('b', {}, fixed(p.consumeTps, 2)))));
    out.push(el('h3', {}, 'Lag per queue'), table(['Topic', 'Broker', 'Queue', 'Broker offset', 'Consumer offset', 'Lag', 'Inflight', 'Client', 'Last consumed'],
      p.queues.map(q => { topics.add(q.topic); return [q.topic, q.brokerName, q.queueId, q.brokerOffset, q.consumerOffset, q.diff, q.inflight, q.clientIP || '', time(q.lastTimestamp)]; }),
      { id: 'group-queues' }));
  }
  out.push(el('h3', {}, 'Connections'));
  if (d.connection) {
    const c = d.connection;
    out.push(el('p', { class: 'muted' }, `${c.consumeType || ''} ${c.messageModel || ''} ${c.consumeFromWhere || ''}`),
      table(['Client id', 'Address', 'Language', 'Version'], (c.connectionSet || []).map(x => [x.clientId, x.clientAddr, x.language, d.versions[x.clientId] || String(x.version)]), { id: 'connections' }),
      table(['Subscribed topic', 'Expression'], Object.values(c.subscriptionTable || {}).map(sd => { topics.add(sd.topic); return [sd.topic, sd.subString]; }), { id: 'subscriptions' }));
  } else {
    out.push(el('p', { class: 'muted', id: 'connections' }, d.connectionError || 'no connection'));
  }
  const box = el('p', { id: 'reset-result' });
  const form = el('form', { class: 'inline', id: 'reset-offset' },
    el('label', {}, 'Topic', el('select', { name: 'topic' }, [...topics].filter(t => !t.startsWith('%RETRY%')).concat([...topics].filter(t => t.startsWith('%RETRY%')))
      .map(t => el('option', { value: t }, t)))),
    el('label', {}, 'To the time (empty: earliest)', el('input', { name: 'time', type: 'datetime-local', step: 1 })),
    el('label', {}, 'Force', el('input', { name: 'force', type: 'checkbox', checked: true })),
    el('button', { type: 'submit' }, 'Reset offset'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const f = new FormData(form);
    const t = f.get('time');
    const ts = t ? new Date(t).getTime() : 0;
    const body = { group: d.group, topic: f.get('topic'), timestamp: ts, force: f.get('force') !== null };
    if (!await confirmAction(`Reset the offsets of group ${body.group} on topic ${body.topic} to ${ts ? new Date(ts).toLocaleString() : 'the earliest message'}?`)) return;
    const r = await actionResult(box, post('/api/resetOffset', body));
    if (r) { box.textContent = 'Offsets reset: ' + r.offsets.map(o => `${o.brokerName}[${o.queueId}]=${o.offset}`).join(', '); }
  });
  out.push(el('h3', {}, 'Reset offset to a time'), form, box);
  if (p && p.queues.length) out.push(el('h3', {}, 'Reset offset to an offset per queue'), ...queueResetForm(d.group, p.queues));
  const m = await get('/api/metrics?' + new URLSearchParams({ top: 0, group: d.group }));
  out.push(el('h3', {}, 'Lag over time'), lineChart(`Lag of ${d.group} (messages)`, m.lag, 'chart-group-lag'));
  return out;
}

// queueResetForm: for a topic of the group, each queue's consumer offset
// as an editable number; the queues changed are reset to their new offset.
function queueResetForm(group, queues) {
  const topics = [...new Set(queues.map(q => q.topic))];
  const box = el('p', { id: 'reset-queues-result' });
  const rowsBox = el('div');
  const topicSel = el('select', { name: 'topic' }, topics.map(t => el('option', { value: t }, t)));
  const render = () => {
    rowsBox.replaceChildren(table(['Broker', 'Queue', 'Broker offset', 'Consumer offset', 'New offset'],
      queues.filter(q => q.topic === topicSel.value).map(q => [q.brokerName, q.queueId, q.brokerOffset, q.consumerOffset,
        el('td', {}, el('input', { type: 'number', min: 0, value: q.consumerOffset, 'data-broker': q.brokerName, 'data-queue': q.queueId, 'data-current': q.consumerOffset }))]),
      { id: 'reset-queues' }));
  };
  topicSel.addEventListener('change', render);
  render();
  const form = el('form', { id: 'reset-offset-queues' }, el('label', {}, 'Topic', topicSel), rowsBox, el('button', { type: 'submit' }, 'Reset changed queues'));
  form.addEventListener('submit', async ev => {
    ev.preventDefault();
    const changed = [...rowsBox.querySelectorAll('input')].filter(i => i.value !== '' && i.value !== i.dataset.current);
    if (!changed.length) { box.className = 'error'; box.textContent = 'No offset changed.'; return; }
    const body = { group, topic: topicSel.value, queues: changed.map(i => ({ brokerName: i.dataset.broker, queueId: +i.dataset.queue, offset: +i.value })) };
    const what = changed.map(i => `${i.dataset.broker}[${i.dataset.queue}] ${i.dataset.current} → ${i.value}`).join(', ');
    if (!await confirmAction(`Reset the offsets of group ${group} on topic ${body.topic}: ${what}?`)) return;
    const r = await actionResult(box, post('/api/resetOffsetByQueue', body));
    if (r) { box.textContent = 'Offsets reset: ' + r.offsets.map(o => `${o.brokerName}[${o.queueId}]=${o.offset}`).join(', '); }
  });
  return [form, box];
}

async function pageLite(params) {
  const parent = params.get('parent') || '', group = params.get('group') || '', cursor = params.get('cursor') || '';
  const form = el('form', { class: 'inline', id: 'lite-form' },
    el('label', {}, 'Parent topic', el('input', { name: 'parent', value: parent, required: true })),
    el('label', {}, 'Group (optional)', el('input', { name: 'group', value: group })),
    el('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    const f = new FormData(form);
    location.hash = '#/lite?' + new URLSearchParams({ parent: f.get('parent'), group: f.get('group') });
  });
  const out = [el('h2', {}, 'Lite topics'), form];
  if (!parent) return out;
  const q = new URLSearchParams({ parent, group, cursor, limit: params.get('limit') || '50' });
  const d = await get('/api/lite?' + q);
  out.push(table(['Broker', 'TTL', 'Lite topics', 'LMQ', 'Groups', 'Error'], d.brokers.map(b =>
    [b.brokerName, b.info ? b.info.ttl : '', b.info ? b.info.liteTopicCount : '', b.info ? b.info.lmqNum : '', b.info ? (b.info.groups || []).join(', ') : '', b.error || '']), { id: 'lite-brokers' }));
  const groups = [...new Set(d.brokers.flatMap(b => b.info ? b.info.groups || [] : []))].sort();
  if (groups.length) {
    out.push(el('p', { id: 'lite-lag-links' }, 'Lite topics with the largest lag: ',
      groups.flatMap(g => [link('#/litelag?' + new URLSearchParams({ parent, group: g }), g), ' '])));
  }
  out.push(table(['Broker', 'Lite topic', 'Min offset', 'Max offset', 'Last update', 'Lag per group (consumer offset / lag)'], d.liteTopics.map(e =>
    [e.brokerName, e.liteTopic, e.minOffset, e.maxOffset, time(e.lastUpdateTimestamp), (e.groups || []).map(g => `${g.group}(${g.consumerOffset}/${g.lag})`).join(' ')]), { id: 'lite-topics' }));
  if (d.nextCursor) {
    out.push(link('#/lite?' + new URLSearchParams({ parent, group, cursor: d.nextCursor, limit: params.get('limit') || '50' }), 'Next page →'));
  }
  return out;
}

// pageLiteLag: a lite group's lag top-K over the brokers of its parent.
async function pageLiteLag(params) {
  const parent = params.get('parent') || '', group = params.get('group') || '', topK = params.get('topK') || '10';
  const form = el('form', { class: 'inline', id: 'lite-lag-form' },
    el('label', {}, 'Parent topic', el('input', { name: 'parent', value: parent, required: true })),
    el('label', {}, 'Group', el('input', { name: 'group', value: group, required: true })),
    el('label', {}, 'Top K', el('input', { name: 'topK', type: 'number', min: 1, max: 1000, value: topK })),
    el('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    location.hash = '#/litelag?' + new URLSearchParams(new FormData(form));
  });
  const out = [el('h2', {}, 'Lite group lag top-K'), form];
  if (!parent || !group) return out;
  const d = await get('/api/liteLag?' + new URLSearchParams({ parent, group, topK }));
  out.push(el('div', { class: 'cards' },
    el('div', { class: 'card', id: 'lite-lag-total' }, 'Total lag', el('b', {}, String(d.totalLagCount))),
    el('div', { class: 'card' }, 'Oldest unconsumed', el('b', {}, time(d.earliestUnconsumedTimestamp)))));
  out.push(table(['Broker', 'Lag', 'Oldest unconsumed', 'Error'], d.brokers.map(b =>
    [b.brokerName, b.totalLagCount, time(b.earliestUnconsumedTimestamp), b.error || '']), { id: 'lite-lag-brokers' }));
  const rows = xs => xs.map((x, i) => [i + 1, x.brokerName, x.liteTopic, x.lagCount, time(x.earliestUnconsumedTimestamp)]);
  out.push(el('h3', {}, `The ${d.topK} lite topics with the most messages unconsumed`),
    table(['#', 'Broker', 'Lite topic', 'Lag', 'Oldest unconsumed'], rows(d.byCount), { id: 'lite-lag-count' }),
    el('h3', {}, `The ${d.topK} lite topics with the oldest unconsumed message`),
    table(['#', 'Broker', 'Lite topic', 'Lag', 'Oldest unconsumed'], rows(d.byAge), { id: 'lite-lag-age' }));
  return out;
}

async function pagePop(params) {
  const group = params.get('group') || '', topic = params.get('topic') || '';
  const form = el('form', { class: 'inline' },
    el('label', {}, 'Group (optional)', el('input', { name: 'group', value: group })),
    el('label', {}, 'Topic (optional)', el('input', { name: 'topic', value: topic })),
    el('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    const f = new FormData(form);
    location.hash = '#/pop?' + new URLSearchParams({ group: f.get('group'), topic: f.get('topic'), t: Date.now() });
  });
  const d = await get('/api/pop?' + new URLSearchParams({ group, topic }));
  const out = [el('h2', {}, 'Pop status'), form];
  for (const b of d.brokers) {
    const s = b.status;
    out.push(el('h3', {}, (s ? s.brokerName + ' ' : '') + b.addr));
    if (b.error) { out.push(el('p', { class: 'error' }, b.error)); continue; }
    out.push(table(['Group', 'Topic', 'Backlog', 'Inflight', 'Checkpoints', 'Blocked queues', 'Oldest pop'], (s.groups || []).map(g =>
      [g.group, g.topic, g.backlog, g.inFlight, g.checkpoints, g.blockedQueues, time(g.oldestPopTime)]), { class: 'pop-groups' }));
  }
  return out;
}

function messageTable(msgs) {
  return msgs.map(m => el('div', { class: 'message' },
    table(['Field', 'Value'], [
      ['Message id', m.msgId], ['Offset message id', m.offsetMsgId], ['Topic', m.topic], ['Tags', m.tags || ''], ['Keys', (m.keys || []).join(' ')],
      ['Queue', String(m.queueId)], ['Queue offset', String(m.queueOffset)], ['Born', m.bornHost + ' ' + time(m.bornTimestamp)],
      ['Stored', m.storeHost + ' ' + time(m.storeTimestamp)], ['Reconsume times', String(m.reconsumeTimes)],
      ['Properties', el('td', { class: 'lines' }, Object.entries(m.properties || {}).map(([k, v]) => k + '=' + v).join('\n'))],
      ['Body (' + m.bodySize + ' bytes)', el('td', {}, el('pre', {}, m.body))],
      ['Trace', el('td', {}, link('#/trace?' + new URLSearchParams({ id: m.msgId }), 'message trace'))]])));
}

async function pageMessages(params) {
  const mode = params.get('mode') || 'id';
  const field = (name, label, extra) => el('label', {}, label, el('input', Object.assign({ name, value: params.get(name) || '' }, extra || {})));
  const form = el('form', { class: 'inline', id: 'message-form' },
    field('topic', 'Topic', { required: true }),
    el('label', {}, 'By', el('select', { name: 'mode' }, ['id', 'key', 'offset'].map(m => el('option', { value: m, selected: m === mode }, m)))),
    field('id', 'Message id'), field('key', 'Key'), field('broker', 'Broker (by offset)'), field('queueId', 'Queue (by offset)'), field('offset', 'Offset'),
    el('button', { type: 'submit' }, 'Find'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    const f = new FormData(form);
    location.hash = '#/messages?' + new URLSearchParams([...f.entries()].filter(([, v]) => v !== ''));
  });
  const out = [el('h2', {}, 'Messages'), form];
  const topic = params.get('topic');
  if (!topic) return out;
  const q = new URLSearchParams({ topic });
  if (mode === 'id') q.set('id', params.get('id') || '');
  if (mode === 'key') q.set('key', params.get('key') || '');
  if (mode === 'offset') { q.set('broker', params.get('broker') || ''); q.set('queueId', params.get('queueId') || ''); q.set('offset', params.get('offset') || ''); }
  const d = await get('/api/messages?' + q);
  out.push(el('p', { class: 'muted', id: 'message-count' }, `${d.messages.length} message(s)`), ...messageTable(d.messages));
  return out;
}

async function pageTrace(params) {
  const id = params.get('id') || '';
  const form = el('form', { class: 'inline' },
    el('label', {}, 'Message id', el('input', { name: 'id', value: id, required: true })),
    el('label', {}, 'Trace topic', el('input', { name: 'traceTopic', value: params.get('traceTopic') || '', placeholder: 'RMQ_SYS_TRACE_TOPIC' })),
    el('button', { type: 'submit' }, 'Trace'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    location.hash = '#/trace?' + new URLSearchParams([...new FormData(form).entries()].filter(([, v]) => v !== ''));
  });
  const out = [el('h2', {}, 'Message trace'), form];
  if (!id) return out;
  const d = await get('/api/trace?' + params);
  out.push(table(['Type', 'Group', 'Client host', 'Time', 'Cost (ms)', 'Status'], d.traces.map(t =>
    [t.msgType, t.groupName, t.clientHost, time(t.timeStamp), t.costTime, t.status]), { id: 'traces' }));
  return out;
}

const palette = ['#1f5fbf', '#e4572e', '#17bebb', '#76b041', '#ffc914', '#8e44ad', '#2e282a', '#d81159'];

// lineChart draws series ({name: [[t, v], ...]}) as an inline SVG.
function lineChart(title, series, id) {
  const W = 760, H = 220, L = 56, R = 10, T = 24, B = 28;
  const ns = 'http://www.w3.org/2000/svg';
  const s = (tag, attrs, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
    if (text !== undefined) e.textContent = text;
    return e;
  };
  const names = Object.keys(series).sort();
  const pts = names.flatMap(n => series[n]);
  const svg = s('svg', { width: W, height: H, viewBox: `0 0 ${W} ${H}`, class: 'chart', id, role: 'img', 'aria-label': title });
  svg.append(s('text', { x: L, y: 16 }, title));
  if (pts.length === 0) {
    svg.append(s('text', { x: L, y: H / 2 }, 'no samples yet'));
    return el('div', {}, svg);
  }
  const t0 = Math.min(...pts.map(p => p[0])), t1 = Math.max(...pts.map(p => p[0]), t0 + 1);
  const vmax = Math.max(1, ...pts.map(p => p[1]));
  const x = t => L + (t - t0) / (t1 - t0) * (W - L - R);
  const y = v => H - B - v / vmax * (H - T - B);
  svg.append(s('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#999' }), s('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#999' }));
  for (const f of [0, 0.5, 1]) {
    svg.append(s('text', { x: 4, y: y(vmax * f) + 4 }, (vmax * f).toFixed(vmax < 10 ? 1 : 0)));
  }
  svg.append(s('text', { x: L, y: H - 8 }, new Date(t0).toLocaleTimeString()), s('text', { x: W - R - 60, y: H - 8 }, new Date(t1).toLocaleTimeString()));
  const legend = el('div', { class: 'legend' });
  names.forEach((n, i) => {
    const color = palette[i % palette.length];
    const d = series[n].map(p => `${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ');
    svg.append(s('polyline', { points: d, fill: 'none', stroke: color, 'stroke-width': 2, 'data-series': n }));
    const sw = el('i');
    sw.style.background = color;
    legend.append(el('span', {}, sw, n));
  });
  return el('div', {}, svg, legend);
}

async function pageCharts(params) {
  const top = params.get('top') || '10', named = (params.get('groups') || '').split(',').map(g => g.trim()).filter(g => g);
  const q = new URLSearchParams({ top });
  for (const g of named) q.append('group', g);
  const d = await get('/api/metrics?' + q);
  const form = el('form', { class: 'inline', id: 'charts-form' },
    el('label', {}, 'Groups with the largest lag', el('input', { name: 'top', type: 'number', min: 0, max: 100, value: top })),
    el('label', {}, 'and these groups (comma-separated)', el('input', { name: 'groups', value: named.join(',') })),
    el('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', ev => {
    ev.preventDefault();
    location.hash = '#/charts?' + new URLSearchParams(new FormData(form));
  });
  const out = [el('h2', {}, 'Charts'),
    el('p', { class: 'muted' }, `${d.samples} samples, one every ${d.intervalMs / 1000} s, kept in the console's memory; lag of all ${d.groups} groups sampled, one request per broker`),
    lineChart('Put TPS per broker', d.tpsIn, 'chart-tps-in'), lineChart('Get TPS per broker', d.tpsOut, 'chart-tps-out'),
    form, lineChart(`Lag per consumer group (messages): the ${top} largest now` + (named.length ? ' and ' + named.join(', ') : ''), d.lag, 'chart-lag')];
  for (const [where, e] of Object.entries(d.lagErrors || {})) out.push(el('p', { class: 'error' }, `lag incomplete: ${where}: ${e}`));
  return out;
}

// ---- router ----

const routes = [
  [/^cluster$/, () => pageCluster(), 'cluster'],
  [/^topics$/, () => pageTopics(), 'topics'],
  [/^topic\/(.+)$/, m => pageTopic(decodeURIComponent(m[1])), 'topics'],
  [/^groups$/, (m, p) => pageGroups(p), 'groups'],
  [/^group\/(.+)$/, m => pageGroup(decodeURIComponent(m[1])), 'groups'],
  [/^lite$/, (m, p) => pageLite(p), 'lite'],
  [/^pop$/, (m, p) => pagePop(p), 'pop'],
  [/^messages$/, (m, p) => pageMessages(p), 'messages'],
  [/^trace$/, (m, p) => pageTrace(p), 'messages'],
  [/^litelag$/, (m, p) => pageLiteLag(p), 'lite'],
  [/^charts$/, (m, p) => pageCharts(p), 'charts'],
];

let generation = 0;

async function route() {
  const hash = location.hash.replace(/^#\/?/, '') || 'cluster';
  const [path, query] = hash.split('?');
  const params = new URLSearchParams(query || '');
  const gen = ++generation;
  main.dataset.state = 'loading';
  for (const [re, page, nav] of routes) {
    const m = path.match(re);
    if (!m) continue;
    document.querySelectorAll('#nav a').forEach(a => a.classList.toggle('active', a.dataset.page === nav));
    try {
      const nodes = await page(m, params);
      if (gen !== generation) return;
      main.replaceChildren(...nodes);
      main.dataset.page = nav;
      main.dataset.state = 'ready';
    } catch (e) {
      if (gen !== generation) return;
      main.replaceChildren(el('p', { class: 'error', id: 'error' }, e.message));
      main.dataset.state = 'error';
      if (e.needCredentials && await askCredentials(e.message)) route();
    }
    return;
  }
  main.replaceChildren(el('p', { class: 'error' }, 'No such page: ' + path));
  main.dataset.state = 'error';
}

window.addEventListener('hashchange', route);
refreshSession().then(route, e => { main.replaceChildren(el('p', { class: 'error' }, e.message)); main.dataset.state = 'error'; });
