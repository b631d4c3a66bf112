// The board's one script, served as a file (the Content-Security-Policy allows no inline script).
// It keeps an open page live: the server sends an event when files under the root change, and the
// page fetches itself again and swaps its <main>, keeping what a person is typing.
'use strict'

const main = document.getElementById('main')
const status = document.getElementById('live')
const vault = document.body.dataset.vault
let refreshing = false
let again = false

function concerns(paths) {
  if (vault === undefined) return true
  return paths.some((path) => path === '*' || path === vault || path.startsWith(vault + '/'))
}

async function refresh() {
  if (refreshing) {
    again = true
    return
  }
  refreshing = true
  try {
    const response = await fetch(location.href, { credentials: 'same-origin', cache: 'no-store' })
    if (!response.ok) return
    const fresh = new DOMParser().parseFromString(await response.text(), 'text/html').getElementById('main')
    if (!fresh) return
    const typed = new Map([...main.querySelectorAll('textarea, input:not([type=hidden])')].map((field) => [fieldKey(field), field.value]))
    const focused = document.activeElement && main.contains(document.activeElement) ? fieldKey(document.activeElement) : undefined
    const shown = main.querySelector('img.plan')
    main.replaceChildren(...fresh.childNodes)
    keepPicture(shown)
    for (const field of main.querySelectorAll('textarea, input:not([type=hidden])')) {
      const value = typed.get(fieldKey(field))
      if (value !== undefined) field.value = value
      if (focused !== undefined && fieldKey(field) === focused) field.focus()
    }
    main.dataset.refreshed = String(Date.now())
  } finally {
    refreshing = false
    if (again) {
      again = false
      refresh()
    }
  }
}

// The plan's picture a page shows stays until the new one has loaded (Graphviz takes a moment), so it never goes blank.
let pictures = 0
function keepPicture(shown) {
  const incoming = main.querySelector('img.plan')
  if (!shown || !incoming || !shown.complete || shown.naturalWidth === 0 || (incoming.complete && incoming.naturalWidth > 0)) return
  const generation = ++pictures
  incoming.replaceWith(shown)
  incoming.addEventListener(
    'load',
    () => {
      // Only the latest picture replaces the one shown; one a later update asked for again wins.
      if (generation === pictures && shown.isConnected) shown.replaceWith(incoming)
    },
    { once: true },
  )
}

function fieldKey(field) {
  const form = field.closest('form')
  // What a decision is made on (a version, a visit) is left out: text typed for a note stays when the note moves on.
  const owner = form ? [...form.querySelectorAll('input[type=hidden]:not([data-made-on])')].map((input) => input.value).join('/') : ''
  return `${form ? form.getAttribute('action') : ''}|${owner}|${field.name || field.id}`
}

if (main && typeof EventSource === 'function') {
  const events = new EventSource('/events')
  events.addEventListener('ready', () => {
    status.textContent = 'live'
    document.body.dataset.live = 'true'
  })
  events.addEventListener('change', (event) => {
    if (concerns(JSON.parse(event.data))) refresh()
  })
  events.addEventListener('error', () => {
    // Closed for good: the board follows as many pages as it may (503); this one shows what it loaded.
    status.textContent = events.readyState === EventSource.CLOSED ? 'not live: reload to follow the files' : 'reconnecting'
  })
}
