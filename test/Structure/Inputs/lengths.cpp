// Input of function-lengths.test: what the scanner must and must not count.
namespace outer {
struct Shape {
  int size() const { return 1; }  // a one-line member: 1 line
  Shape() : n(0) {
    n = 1;
  }
  int n;
};

/* a comment with an unbalanced } brace */
static const char *kText = "a { string } with { braces";
static const char *kRaw = R"cpp(
int notAFunction() {
)cpp";
static const int kTable[] = {1, 2, 3};

auto withLambda(int x) -> int {
  auto f = [&](int y) {
    if (y > 0) {
      return y;
    }
    return -y;
  };
  for (int i = 0; i < x; ++i) {
    x += f(i);
  }
  return x;
}
} // namespace outer
