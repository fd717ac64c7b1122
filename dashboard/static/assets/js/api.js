// The dashboard's only way to the server: the public HTTP API under /v1,
// authenticated with the visitor's API key, which lives in this browser's
// localStorage until they sign out.

const keyStorage = 'trainyard.apiKey';

export function getKey() {
  try {
    return localStorage.getItem(keyStorage) || '';
  } catch {
    return '';
  }
}

export function setKey(key) {
  localStorage.setItem(keyStorage, key);
}

export function forgetKey() {
  localStorage.removeItem(keyStorage);
}

// APIError is an answer other than 2xx, with the API's own words: detail is
// its message, or the list of validation errors of a 422.
export class APIError extends Error {
  constructor(status, statusText, detail) {
    super(describeDetail(detail) || `${status} ${statusText}`);
    this.status = status;
    this.statusText = statusText;
    this.detail = detail;
  }
}

// describeDetail renders FastAPI's {"detail": ...}: a message as it is, a
// 422's list as "loc: msg" lines.
function describeDetail(detail) {
  if (typeof detail === 'string') return detail;
  if (Array.isArray(detail)) {
    return detail.map((e) => {
      const loc = Array.isArray(e.loc) && e.loc.length ? `${e.loc.join('.')}: ` : '';
      return `${loc}${e.msg ?? JSON.stringify(e)}`;
    }).join('\n');
  }
  return detail === undefined ? '' : JSON.stringify(detail);
}

// request calls the API and returns the decoded JSON body. Errors are
// APIError (the server answered) or TypeError (it could not be reached).
export async function request(method, path, {body, key = getKey(), signal, headers = {}} = {}) {
  const h = {Accept: 'application/json', ...headers};
  if (key) h.Authorization = `Bearer ${key}`;
  if (body !== undefined) h['Content-Type'] = 'application/json';
  const resp = await fetch(`/v1${path}`, {
    method, headers: h, signal, body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  const text = await resp.text();
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!resp.ok) {
    throw new APIError(resp.status, resp.statusText, data && 'detail' in data ? data.detail : text.trim() || undefined);
  }
  return data;
}

export const get = (path, opts) => request('GET', path, opts);
export const post = (path, body, opts) => request('POST', path, {...opts, body});
export const del = (path, body, opts) => request('DELETE', path, {...opts, body});

// query builds "?a=1&b=2" from the set values of params.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, v);
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// errorText says what went wrong in a sentence, in the API's words when it
// answered.
export function errorText(err) {
  if (err instanceof APIError) {
    const head = `${err.status}${err.statusText ? ' ' + err.statusText : ''}`;
    return err.message === head ? head : `${err.message} (${head})`;
  }
  if (err && err.name === 'TypeError') return `Could not reach the API: ${err.message}`;
  return String(err && err.message ? err.message : err);
}

let configPromise = null;

// config is GET /v1/dashboard-config (no key): the Temporal UI's address
// and the job actions this server has.
export function config() {
  if (!configPromise) {
    configPromise = request('GET', '/dashboard-config', {key: ''}).catch((err) => {
      configPromise = null;
      return {temporal_ui_url: null, temporal_namespace: 'default', job_actions: ['cancel'], error: err};
    });
  }
  return configPromise;
}
