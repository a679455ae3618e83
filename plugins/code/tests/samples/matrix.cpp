#include <vector>

namespace linalg {

class Matrix {
  public:
    double trace() const {
        double sum = 0;
        for (int i = 0; i < n; i++) sum += at(i, i);
        return sum;
    }
};

double dot(const std::vector<double>& a, const std::vector<double>& b) {
    double sum = 0;
    for (size_t i = 0; i < a.size(); i++) sum += a[i] * b[i];
    return sum;
}

}  // namespace linalg
