// Argument checks shared by the entry points: each throws the typed error with the message format
// every other check uses ("<argument>: expected ..., got <value>").
#pragma once

namespace webattention {

// ShapeError unless value >= 1.
void require_positive(const char* argument, int value);

// ConfigError unless 0 <= value < count (a head index).
void require_index(const char* argument, int value, int count);

}  // namespace webattention
