// The agreement report's bar chart: Fleiss' kappa per type, one bar per level.
document.addEventListener("DOMContentLoaded", () => {
  const source = document.getElementById("agreement-chart-data");
  const canvas = document.getElementById("kappa-chart");
  if (!source || !canvas || typeof Chart === "undefined") return;
  const data = JSON.parse(source.textContent);
  // The Django JavaScript catalogue (/jsi18n/) runs before this deferred script.
  const { gettext, interpolate } = window;
  const colours = ["#7a4fd1", "#2d5bd7", "#1f7a8c"];
  new Chart(canvas, {
    type: "bar",
    data: {
      labels: data.groups.map((g) => g.name),
      datasets: data.levels.map((level, i) => ({
        label: interpolate(gettext("Fleiss' kappa, %(level)s"), { level }, true),
        data: data.groups.map((g) => g.kappa[i]),
        backgroundColor: colours[i % colours.length],
      })),
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      scales: { y: { suggestedMin: 0, suggestedMax: 1, title: { display: true, text: gettext("kappa") } } },
    },
  });
  canvas.dataset.rendered = "true";
});
