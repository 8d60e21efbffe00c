#!/bin/sh
# Greets its first argument, or the world.
echo "Helo, ${1:-world}!"
