// streamcheck's recorder: part of racegate's Sanitizer API tool (tool.cpp forwards callbacks to
// it when RACEGATE_GC_MODE contains "streams"). It judges nothing: it writes one JSON line per
// CUDA operation to RACEGATE_GC_DIR/streams.jsonl, and racegate's happens-before model
// (harness/src/judge/sanitize/globalcheck/streams.rs) decides.
#pragma once

#include <sanitizer.h>

#include <string>

// Opens the trace and installs the guard-page handler; returns false if the trace cannot be
// written (the tool then writes an error line of its own).
bool streams_init(const char* dir);

// Subscribes `handle` to the domains the recorder needs.
void streams_enable(Sanitizer_SubscriberHandle handle);

// One callback of any domain (the tool's own calls already filtered out).
void streams_on_callback(Sanitizer_CallbackDomain domain, Sanitizer_CallbackId cbid, const void* cbdata);

// A line the tool writes into the trace after a launch's own line (a footprint run's bytes
// touched): in order with the recorder's lines.
void streams_line(const std::string& json);
