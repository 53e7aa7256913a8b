// orch serve: keep the page in step with the state branch.
//
// The server streams the branch's tip (Server-Sent Events, /events). When it
// differs from the tip this page shows, the page fetches itself again (only
// the part below the header: X-Orch-Fragment) and swaps it in, and the
// header says so, quietly. A page with something typed into a form is not
// swapped, nor the answer to an action that failed with text the server
// shows back (data-kept): the header says the task changed, and the text
// stays.
(function () {
  "use strict";
  var page = document.getElementById("page");
  var live = document.getElementById("live");
  if (!page || !live || !window.EventSource) {
    return;
  }
  var tip = document.body.getAttribute("data-tip") || "";
  var fetching = false;
  var again = "";

  function say(text, cls) {
    live.textContent = text;
    live.className = "live" + (cls ? " " + cls : "");
  }

  function clock() {
    var d = new Date();
    var p = function (n) { return (n < 10 ? "0" : "") + n; };
    return p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds());
  }

  // busy: the person is typing into a form of the page.
  function busy() {
    var a = document.activeElement;
    if (a && page.contains(a) && /^(TEXTAREA|INPUT|SELECT)$/.test(a.tagName) && a.type !== "hidden") {
      return true;
    }
    var boxes = page.querySelectorAll("textarea, input[type=text]");
    for (var i = 0; i < boxes.length; i++) {
      if (boxes[i].value !== boxes[i].defaultValue) {
        return true;
      }
    }
    return false;
  }

  function refresh(next) {
    if (fetching) {
      again = next;
      return;
    }
    if (page.querySelector("[data-kept]")) {
      // The answer to a POST: a reload would send the form again.
      say("changed at " + next.slice(0, 7) + ": open the task again to see it (your text stays here until then)", "stale");
      return;
    }
    if (busy()) {
      say("changed at " + next.slice(0, 7) + ": reload to see it (your text is kept until then)", "stale");
      return;
    }
    fetching = true;
    var x = new XMLHttpRequest();
    x.open("GET", location.pathname + location.search);
    x.setRequestHeader("X-Orch-Fragment", "1");
    x.onload = function () {
      fetching = false;
      if (x.status === 200) {
        page.innerHTML = x.responseText;
        tip = x.getResponseHeader("X-Orch-Tip") || next;
        document.body.setAttribute("data-tip", tip);
        say("updated " + clock() + " · at " + tip.slice(0, 7), "fresh");
      } else if (x.status === 404) {
        tip = next;
        say("at " + next.slice(0, 7) + ": this page is gone from the branch", "stale");
      } else {
        say("could not update (" + x.status + ")", "stale");
      }
      if (again && again !== tip) {
        var n = again;
        again = "";
        refresh(n);
      }
    };
    x.onerror = function () {
      fetching = false;
      say("could not update: is orch serve running?", "stale");
    };
    x.send();
  }

  var es = new EventSource("/events");
  es.addEventListener("tip", function (ev) {
    if (ev.data && ev.data !== tip) {
      refresh(ev.data);
    } else if (live.className.indexOf("off") >= 0) {
      say("at " + tip.slice(0, 7));
    }
  });
  es.onerror = function () {
    say("live updates paused: reconnecting…", "off");
  };
})();
