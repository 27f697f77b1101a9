#!/bin/sh
echo "e2e: not yet"; exit 0
