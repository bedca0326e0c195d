// Injected at the top of a copy of the Snakemake report by tests/test_workflow.py and read back from
// Chromium's DOM dump: the page's errors (script errors, failed loads, console.error), where the
// landing text's findings sit in the first screen, and every HTML entry opened as the report opens
// it (its table's rows, a click on the first column header).
(function () {
  var errors = [];
  window.addEventListener("error", function (e) {
    var t = e.target;
    errors.push(e.message || ("failed to load " + ((t && (t.src || t.href)) || t)));
  }, true);
  window.addEventListener("unhandledrejection", function (e) { errors.push("unhandled: " + e.reason); });
  var consoleError = console.error;
  console.error = function () {
    errors.push(Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };

  function decode(uri) {
    var b64 = uri.slice(uri.indexOf("base64,") + 7);
    var bytes = Uint8Array.from(atob(b64), function (c) { return c.charCodeAt(0); });
    return new TextDecoder("utf-8").decode(bytes);
  }

  function landing() {
    var heads = Array.prototype.filter.call(document.querySelectorAll("h1, h2, h3"), function (h) {
      return h.textContent.trim() === "Findings";
    });
    if (!heads.length) return { found: false };
    var head = heads[0], box = head.getBoundingClientRect();
    var list = head.parentElement.querySelector("li");
    var item = list ? list.getBoundingClientRect() : null;
    return {
      found: true, viewport: [window.innerWidth, window.innerHeight],
      heading: [box.left, box.top, box.right, box.bottom],
      first_finding: item ? [item.left, item.top, item.right, item.bottom] : null,
      first_finding_text: list ? list.textContent : "",
      font_px: list ? parseFloat(getComputedStyle(list).fontSize) : 0
    };
  }

  function openEntry(path) {
    return new Promise(function (resolve) {
      var frame = document.createElement("iframe");
      frame.style.width = "1200px";
      frame.style.height = "600px";
      frame.onload = function () {
        var doc = frame.contentDocument, out = { path: path };
        var table = doc.querySelector("table");
        out.rows = table ? table.tBodies[0].rows.length : -1;
        out.columns = table ? table.tHead.rows[0].cells.length : 0;
        out.caption = (doc.querySelector("p.caption") || { textContent: "" }).textContent;
        if (table) {
          var th = table.tHead.rows[0].cells[0];
          th.click();
          out.sorted = th.getAttribute("aria-sort");
        }
        frame.remove();
        resolve(out);
      };
      frame.srcdoc = decode(results[path].data_uri);
      document.body.appendChild(frame);
    });
  }

  window.addEventListener("load", function () {
    setTimeout(function () {
      var report = { landing: landing(), tables: [] };
      var html = Object.keys(results).filter(function (p) { return results[p].mime_type === "text/html"; });
      html.reduce(function (chain, path) {
        return chain.then(function () { return openEntry(path).then(function (r) { report.tables.push(r); }); });
      }, Promise.resolve()).then(function () {
        report.errors = errors;
        var out = document.createElement("pre");
        out.id = "report-check";
        out.textContent = JSON.stringify(report);
        document.body.appendChild(out);
      });
    }, 500);
  });
})();
