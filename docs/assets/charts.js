/* Draws every chart on the page from its inline Vega-Lite spec with the vendored Vega JS
   (assets/vendor/vega.js). Without scripts the build-time PNG stays visible. */
(function () {
  "use strict";

  function draw(figure) {
    var view = figure.querySelector(".phase-chart-view");
    var source = figure.querySelector("script.phase-chart-spec");
    var fallback = figure.querySelector(".phase-chart-fallback");
    if (!view || !source || typeof window.vegaEmbed !== "function") {
      figure.setAttribute("data-drawn", "fallback");
      return;
    }
    var spec = JSON.parse(source.textContent);
    window.vegaEmbed(view, spec, { actions: false, renderer: "svg" }).then(
      function () {
        if (fallback) fallback.hidden = true;
        figure.setAttribute("data-drawn", "svg");
      },
      function (error) {
        figure.setAttribute("data-drawn", "fallback");
        console.error("phase: chart " + figure.id + " could not be drawn: " + error);
      }
    );
  }

  document.querySelectorAll(".phase-chart").forEach(draw);
})();
