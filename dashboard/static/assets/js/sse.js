// A reader of Server-Sent Events over fetch. EventSource cannot send an
// Authorization header, so the stream is read and parsed here; when the
// connection drops before the server ends it, the reader reconnects with
// Last-Event-ID and the server resumes after the last event it delivered.

import {getKey} from './api.js';

// streamEvents calls onEvent({id, type, data}) for each event of the URL's
// stream until an event for which until(ev) is true has come (resolves) or
// signal aborts. A stream that ends or breaks before that is resumed after
// retryMs; onError(err) is told of each failed attempt. An answer of 4xx
// (other than 429) rejects.
export async function streamEvents(url, {signal, onEvent, onError, until = () => false, retryMs = 1500}) {
  let lastId = '';
  for (;;) {
    try {
      const headers = {Accept: 'text/event-stream', Authorization: `Bearer ${getKey()}`};
      if (lastId) headers['Last-Event-ID'] = lastId;
      const resp = await fetch(url, {headers, signal, cache: 'no-store'});
      if (!resp.ok) {
        const err = new Error(await resp.text());
        err.status = resp.status;
        throw err;
      }
      for await (const ev of parse(resp.body)) {
        if (ev.type === 'error') throw new Error(ev.data && ev.data.detail ? ev.data.detail : 'the event stream failed');
        if (ev.id) lastId = ev.id;
        onEvent(ev);
        if (until(ev)) return;
      }
      throw new Error('the event stream ended early');
    } catch (err) {
      if (signal && signal.aborted) return;
      if (err.status && err.status < 500 && err.status !== 429) throw err;
      if (onError) onError(err);
      await sleep(retryMs, signal);
      if (signal && signal.aborted) return;
    }
  }
}

// parse yields the events of an SSE body: id, type (event:) and data
// (data: lines joined, decoded as JSON when it is JSON). Comments such as
// keep-alives are skipped.
async function* parse(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  let ev = {id: '', type: 'message', data: []};
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buf += value;
    let nl;
    while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
      if (nl === buf.length - 1 && buf[nl] === '\r') break; // maybe half of a CRLF
      const line = buf.slice(0, nl);
      buf = buf.slice(nl + (buf.startsWith('\r\n', nl) ? 2 : 1));
      if (line === '') {
        if (ev.data.length) {
          const raw = ev.data.join('\n');
          let data = raw;
          try {
            data = JSON.parse(raw);
          } catch { /* plain text */ }
          yield {id: ev.id, type: ev.type, data};
        }
        ev = {id: ev.id, type: 'message', data: []};
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let val = colon < 0 ? '' : line.slice(colon + 1);
      if (val.startsWith(' ')) val = val.slice(1);
      if (field === 'data') ev.data.push(val);
      else if (field === 'event') ev.type = val;
      else if (field === 'id') ev.id = val;
    }
  }
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    if (signal) signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, {once: true});
  });
}
