// End-to-end fault tests (issue 7): job.
#include <gtest/gtest.h>

#include "e2e/cli_helpers.h"
