// Shipped code in pieces a reader can hold (issue 36): no file over MAX_FILE_LINES lines and no
// function over MAX_FUNCTION_LINES, in the package's JS (web/src) and the core's C++ (cpp/src,
// cpp/include, cpp/bindings). Tests, benches and scripts are not shipped and not counted.
// `node tests/js/code_size.test.js --list` prints the longest files and functions.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

export const MAX_FILE_LINES = 400;
export const MAX_FUNCTION_LINES = 80;

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SHIPPED = [['web/src', /\.m?js$/], ['cpp/src', /\.(cpp|h)$/], ['cpp/include', /\.h$/], ['cpp/bindings', /\.(cpp|h)$/]];

/** Every shipped source file, as a path relative to the repository root. */
function shippedFiles() {
  const walk = (dir) => readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
  return SHIPPED.flatMap(([dir, pattern]) => walk(join(ROOT, dir)).filter((f) => pattern.test(f)))
    .map((f) => relative(ROOT, f).split('\\').join('/'));
}

const lineOf = (text, index) => text.slice(0, index).split('\n').length;

/** JS functions, methods and arrow functions (TypeScript's parser): [{ name, first, last }] lines. */
export function jsFunctions(text) {
  const source = ts.createSourceFile('x.js', text, ts.ScriptTarget.Latest, true, ts.ScriptKind.JS);
  const found = [];
  const visit = (node) => {
    if (ts.isFunctionLike(node) && node.body) {
      const name = node.name?.getText(source) ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name.getText(source) : '(anonymous)');
      found.push({ name, first: lineOf(text, node.getStart(source)), last: lineOf(text, node.end) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** C++ text with comments, string and character literals and preprocessor lines blanked (newlines kept). */
function cppCode(text) {
  const blank = (s) => s.replace(/[^\n]/g, ' ');
  return text
    .replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*|R"([^(]*)\([\s\S]*?\)\1"|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'/g, blank)
    .replace(/^[ \t]*#[^\n]*(?:\\\n[^\n]*)*/gm, blank);
}

// What precedes a function body's brace: a parameter list, then qualifiers or a trailing return type;
// a constructor's initialiser list ends the same way. Control statements and `else`, `do` and `try`
// blocks are not functions.
const FUNCTION_HEADER = /\)(?:\s*(?:const|noexcept|override|final|mutable|volatile|&|->\s*[\w:<>,\s*&]+))*\s*$/;
const CONTROL = /^\s*(?:else\b|do\b|try\b|(?:else\s+)?(?:if|for|while|switch|catch)\b)/;

// A header's function name: the first name before a parenthesis (attributes aside), or a lambda's capture.
const functionName = (header) =>
  header.replace(/__attribute__\s*\(\([^]*?\)\)/g, '').match(/([\w:~]+|\[[^\]]*\])\s*\(/)?.[1] ?? '(function)';

/** C++ function bodies, lambdas included, found by their headers and matched braces: [{ name, first, last }]. */
export function cppFunctions(text) {
  const code = cppCode(text);
  const found = [];
  const open = [];  // for each open brace: the function it starts, or null
  let headerStart = 0;
  let parens = 0;  // a for's `;` is inside them
  for (let i = 0; i < code.length; ++i) {
    const c = code[i];
    if (c === '(') ++parens;
    else if (c === ')') --parens;
    else if (c === '{') {
      const header = code.slice(headerStart, i);
      const isFunction = FUNCTION_HEADER.test(header) && !CONTROL.test(header);
      open.push(isFunction ? { name: functionName(header), first: lineOf(code, i) } : null);
      headerStart = i + 1;
    } else if (c === '}') {
      const fn = open.pop();
      if (fn) found.push({ ...fn, last: lineOf(code, i) });
      headerStart = i + 1;
    } else if (c === ';' && parens === 0) {
      headerStart = i + 1;
    }
  }
  return found;
}

/** Each shipped file's length and its functions longer than the limit, as messages. */
export function sizeViolations(files = shippedFiles()) {
  const problems = [];
  for (const file of files) {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
    if (lines > MAX_FILE_LINES) problems.push(`${file}: ${lines} lines (at most ${MAX_FILE_LINES})`);
    const functions = file.endsWith('js') ? jsFunctions(text) : cppFunctions(text);
    for (const { name, first, last } of functions) {
      const length = last - first + 1;
      if (length > MAX_FUNCTION_LINES) problems.push(`${file}:${first}: ${name} is ${length} lines (at most ${MAX_FUNCTION_LINES})`);
    }
  }
  return problems;
}

test(`no shipped file over ${MAX_FILE_LINES} lines, no function over ${MAX_FUNCTION_LINES}`, () => {
  assert.deepEqual(sizeViolations(), []);
});

test('the function finder sees JS and C++ functions, methods, constructors and lambdas, and no control blocks', () => {
  const js = jsFunctions('function a() {\n}\nconst b = (x) => {\n  return x;\n};\nclass C {\n  m() {\n    if (1) {\n    }\n  }\n}\n');
  assert.deepEqual(js.map((f) => [f.name, f.first, f.last]), [['a', 1, 2], ['b', 3, 5], ['m', 7, 10]]);
  const cpp = cppFunctions([
    'namespace n {', 'struct S {', '  int f() const noexcept {', '    if (x) {', '    }', '    return 0;', '  }', '};',
    'S::S(int a) : a_(a), b_("}") {', '  auto g = [&](int y) {', '    return y; // }', '  };', '}',
    'auto h(int x) -> int {', '  for (;;) {', '  }', '}', '}',
  ].join('\n'));
  assert.deepEqual(cpp.map((f) => [f.name, f.first, f.last]), [['f', 3, 7], ['[&]', 10, 12], ['S::S', 9, 13], ['h', 14, 17]]);
});

if (process.argv.includes('--list')) {
  const rows = shippedFiles().flatMap((file) => {
    const text = readFileSync(join(ROOT, file), 'utf8');
    const fns = file.endsWith('js') ? jsFunctions(text) : cppFunctions(text);
    return [...fns.map((f) => [f.last - f.first + 1, `${file}:${f.first} ${f.name}`])];
  });
  for (const [n, what] of rows.sort((a, b) => b[0] - a[0]).slice(0, 30)) console.log(n, what);
}
