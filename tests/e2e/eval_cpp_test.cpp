// End-to-end evaluation tests (filled in below).
