// Sign in: the visitor pastes an API key; it is tried against the API and,
// if the API accepts it, kept in localStorage. A refused key is reported in
// the API's words.

import {get, setKey, errorText} from '../api.js';
import {h, replace} from '../dom.js';

export function renderSignIn(main, {onSignedIn}) {
  const input = h('input', {
    id: 'api-key', name: 'api-key', type: 'password', autocomplete: 'off', spellcheck: 'false',
    required: true, placeholder: 'ty_…', 'aria-describedby': 'api-key-help',
  });
  const error = h('p', {id: 'sign-in-error', class: 'error', role: 'alert', hidden: true});
  const button = h('button', {type: 'submit', class: 'btn btn-primary'}, 'Sign in');
  const form = h('form', {class: 'signin-card', novalidate: true},
    h('div', {class: 'signin-brand'}, h('span', {class: 'brand-mark', 'aria-hidden': 'true'}), 'trainyard'),
    h('h1', {}, 'Sign in'),
    h('label', {for: 'api-key'}, 'API key'),
    input,
    h('p', {id: 'api-key-help', class: 'help'},
      'The key is kept in this browser until you sign out, and sent only to this server. ',
      h('code', {}, 'make run'), ' prints one; it is also in ', h('code', {}, '.data/dev-api-key'), '.'),
    error,
    button);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const key = input.value.trim();
    if (!key) {
      showError('Paste an API key.');
      return;
    }
    button.disabled = true;
    button.textContent = 'Checking…';
    try {
      // Any route that needs a key tells whether this one is valid.
      await get('/preview/models?limit=1', {key});
      setKey(key);
      onSignedIn();
    } catch (err) {
      showError(err.status === 401 ? `The API refused this key: ${errorText(err)}` : errorText(err));
      button.disabled = false;
      button.textContent = 'Sign in';
      input.focus();
      input.select();
    }
  });
  function showError(msg) {
    error.textContent = msg;
    error.hidden = false;
    input.setAttribute('aria-invalid', 'true');
  }
  replace(main, h('section', {class: 'signin'}, form));
  input.focus();
  return null;
}
