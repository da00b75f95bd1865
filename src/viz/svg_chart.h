// Line charts as inline SVG text, for the run report (no script, no external resource).
//
//   ChartSeries loss{"loss", {{20, 3.1}, {40, 2.7}, {60, 2.5}}};
//   std::string svg = svg_line_chart({"Training loss", "step", ""}, {loss});
//
// Axes span "nice" tick values (1, 2 or 5 times a power of ten) around the data; every series
// gets its own colour and a legend entry; a series of one point is drawn as a dot.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace saccade {

struct ChartSeries {
  std::string name;                               // the legend entry
  std::vector<std::pair<double, double>> points;  // (x, y), in drawing order; non-finite points are skipped
};

struct ChartOptions {
  std::string title;
  std::string x_label;
  std::string y_label;
  int width = 600;   // pixels, legend included
  int height = 300;  // pixels
};

// Tick values covering [low, high] with about `target` intervals: multiples of a step of 1, 2 or
// 5 times a power of ten, from the largest multiple <= low to the smallest >= high. A zero-width
// range is widened around its value first.
std::vector<double> nice_ticks(double low, double high, int target);

// An <svg> element with the title, both axes with their ticks and labels, one polyline per series
// and the legend. Text is XML-escaped. Series without finite points are left out of the legend; with
// none at all the chart says "no data yet".
std::string svg_line_chart(const ChartOptions& options, const std::vector<ChartSeries>& series);

// `text` with & < > " ' replaced by their XML entities.
std::string xml_escape(const std::string& text);

}  // namespace saccade
