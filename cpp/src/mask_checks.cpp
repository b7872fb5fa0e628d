// Shape checks for masks, and their strided views (mask_checks.h).
#include "mask_checks.h"

#include <string>

#include "webattention/errors.h"

namespace webattention {
namespace {

[[noreturn]] void bad_mask_shape(const char* argument, const std::string& expected,
                                 const std::vector<int>& actual) {
  throw ShapeError(argument, std::string(argument) + ": expected shape " + expected + ", got " +
                                 format_shape(actual));
}

}  // namespace

MaskView key_padding_view(const MaskArg& mask, int batch, int S, const char* argument) {
  MaskView view;
  if (mask.kind == MaskKind::kNone) return view;
  const auto& s = mask.shape;
  const bool batched = s.size() == 2 && s[0] == batch && s[1] == S;
  const bool unbatched = s.size() == 1 && batch == 1 && s[0] == S;
  if (!batched && !unbatched) bad_mask_shape(argument, format_shape({batch, S}), s);
  view.kind = mask.kind;
  view.data = mask.data;
  view.batch_stride = S;
  return view;
}

MaskView attn_mask_view(const MaskArg& mask, int batch, int heads, int L, int S,
                        const char* argument) {
  MaskView view;
  if (mask.kind == MaskKind::kNone) return view;
  const auto& s = mask.shape;
  view.kind = mask.kind;
  view.data = mask.data;
  if (s.size() == 2 && s[0] == L && s[1] == S) {
    view.row_stride = S;
    return view;
  }
  if (s.size() == 3 && s[0] == batch * heads && s[1] == L && s[2] == S) {
    view.row_stride = S;
    view.head_stride = static_cast<std::ptrdiff_t>(L) * S;
    view.batch_stride = view.head_stride * heads;
    return view;
  }
  bad_mask_shape(argument,
                 format_shape({L, S}) + " or " + format_shape({batch * heads, L, S}), s);
}

MaskView verify_mask_view(const MaskArg& mask, int batch, int heads, int L, std::int64_t first,
                          const char* argument) {
  MaskView view;
  if (mask.kind == MaskKind::kNone) return view;
  const auto& s = mask.shape;
  const std::ptrdiff_t square = static_cast<std::ptrdiff_t>(L) * L;
  view.kind = mask.kind;
  view.data = mask.data;
  view.row_stride = L;
  view.key0 = first;
  if (s.size() == 2 && s[0] == L && s[1] == L) return view;
  if (s.size() == 3 && s[1] == L && s[2] == L && (s[0] == batch || s[0] == batch * heads)) {
    // [batch, L, L] wins where both read the same (heads == 1).
    view.head_stride = s[0] == batch ? 0 : square;
    view.batch_stride = s[0] == batch ? square : square * heads;
    return view;
  }
  bad_mask_shape(argument, format_shape({L, L}) + ", " + format_shape({batch, L, L}) + " or " +
                               format_shape({batch * heads, L, L}) + " (among the " + std::to_string(L) +
                               " new positions, with a cache)", s);
}

MaskView from_row(MaskView m, int rows) {
  if (m.empty() || rows == 0) return m;
  const std::size_t element = m.kind == MaskKind::kBoolean ? 1 : sizeof(float);
  m.data = static_cast<const char*>(m.data) + static_cast<std::size_t>(rows) * m.row_stride * element;
  return m;
}

}  // namespace webattention
