#!/bin/sh
# Checks the greeting greet.sh prints.
got=$(sh greet.sh rummy)
if [ "$got" = "Hello, rummy!" ]; then
  echo "ok: greet.sh says \"$got\""
else
  echo "FAIL: greet.sh says \"$got\", expected \"Hello, rummy!\"" >&2
  exit 1
fi
