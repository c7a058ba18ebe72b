#!/bin/sh
# A host compiler that records its arguments (one line per call) in
# $RECORD_CXX_LOG, then runs c++ with them.
echo "$*" >> "$RECORD_CXX_LOG"
exec c++ "$@"
