// tether web UI: times in the browser's time zone, and live pages. Plain JavaScript, no
// dependencies. A live page follows a run's event stream (EventSource resumes a dropped
// connection by itself, sending Last-Event-ID); on each event it fetches the page again and
// swaps the regions marked data-live, so the server renders everything.
(() => {
  "use strict";

  const TERMINAL = new Set(["run.completed", "run.failed", "run.timed_out", "run.cancelled"]);
  const when = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
  // Lists show dates briefly, but always with their year.
  const brief = new Intl.DateTimeFormat(undefined, {
    year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit",
  });
  const live = { source: null, url: null, busy: false, again: false };

  function localTimes(root) {
    for (const el of root.querySelectorAll("time[datetime]")) {
      const moment = new Date(el.getAttribute("datetime"));
      if (Number.isNaN(moment.getTime())) continue;
      el.title = el.getAttribute("datetime");
      el.textContent = (el.hasAttribute("data-short") ? brief : when).format(moment);
    }
  }

  function say(text, state) {
    const marker = document.getElementById("live");
    if (!marker) return;
    marker.dataset.state = state || "";
    marker.textContent = "";
    if (!text) return;
    const dot = document.createElement("span");
    dot.className = "live-dot";
    dot.setAttribute("aria-hidden", "true");
    marker.append(dot, " " + text);
  }

  function typingIn(region) {
    const el = document.activeElement;
    return region.contains(el) && el.matches("input:not([type=hidden]), textarea, select");
  }

  function swap(doc) {
    for (const old of document.querySelectorAll("[data-live][id]")) {
      const fresh = doc.getElementById(old.id);
      if (!fresh) continue;
      if (typingIn(old)) {
        // Never pull a form from under someone typing: update it once they leave it.
        document.activeElement.addEventListener("blur", refresh, { once: true });
        continue;
      }
      const open = [...old.querySelectorAll("details[open][id]")].map((d) => d.id);
      const focused = old.contains(document.activeElement) ? document.activeElement.id : "";
      old.replaceWith(fresh);
      for (const id of open) {
        const details = document.getElementById(id);
        if (details) details.open = true;
      }
      if (focused) document.getElementById(focused)?.focus();
      localTimes(fresh);
    }
    document.title = doc.title;
  }

  async function refresh() {
    if (live.busy) {
      live.again = true;
      return;
    }
    live.busy = true;
    try {
      do {
        live.again = false;
        const response = await fetch(location.pathname + location.search, {
          headers: { Accept: "text/html" },
          credentials: "same-origin",
          cache: "no-store",
        });
        if (response.redirected) return location.reload(); // logged out: show the login form
        if (!response.ok) return stop("This page is gone: reload it");
        const doc = new DOMParser().parseFromString(await response.text(), "text/html");
        swap(doc);
        follow(doc.getElementById("live"));
      } while (live.again);
    } catch {
      say("Updates paused: the server cannot be reached", "paused");
    } finally {
      live.busy = false;
    }
  }

  function stop(text) {
    if (live.source) live.source.close();
    live.source = null;
    live.url = null;
    say(text, text ? "stopped" : "");
  }

  function follow(marker) {
    const url = marker && marker.dataset.stream ? marker.dataset.stream : null;
    if (url === live.url) return;
    stop("");
    if (!url) return;
    const source = new EventSource(`${url}?after=${encodeURIComponent(marker.dataset.after)}`);
    live.source = source;
    live.url = url;
    for (const type of (marker.dataset.events || "").split(" ").filter(Boolean)) {
      source.addEventListener(type, () => {
        if (TERMINAL.has(type)) stop("");
        refresh();
      });
    }
    source.onopen = () => say("Live: changes appear as they happen", "live");
    source.onerror = () => {
      if (source !== live.source) return;
      if (source.readyState === EventSource.CLOSED) {
        stop("Live updates stopped: reload the page");
      } else {
        say("Reconnecting…", "reconnecting");
        refresh();
      }
    };
  }

  document.addEventListener("DOMContentLoaded", () => {
    // A refused form answers at its POST address: show (and refresh, and reload) the page's own.
    const page = document.body.dataset.page;
    if (page && page !== location.pathname) history.replaceState(null, "", page + location.hash);
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const tz = document.getElementById("tz");
    if (tz && zone) tz.textContent = zone;
    localTimes(document);
    follow(document.getElementById("live"));
    // A form with data-confirm (closing a session) asks before it is sent.
    document.addEventListener("submit", (event) => {
      const question = event.target.dataset && event.target.dataset.confirm;
      if (question && !window.confirm(question)) event.preventDefault();
    });
  });
})();
