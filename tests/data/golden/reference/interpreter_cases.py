"""Answers (bodies after the prompt's ``def solution():``) that crash the authors' extractor, look at the
interpreter, or carry state from one answer to the next; written for these tests (issue 54). Their
outcomes under the authors' code are recorded in interpreter_cases.jsonl by produce_interpreter.py."""


def body(*lines: str) -> str:
    return "\n" + "".join(f"    {line}\n" for line in lines)


CASES = [
    # --- crashes: an exception escapes the extractor or the correctness check
    {"id": "key_error_huge_key", "group": "crash", "note": "KeyError whose key is an int of 5001 digits",
     "response": body("counts = {}", "return counts[10 ** 5000]")},
    {"id": "pop_huge_key", "group": "crash", "note": "dict.pop of a missing int of 5001 digits",
     "response": body("left = {1: 2}", "return left.pop(10 ** 5000)")},
    {"id": "set_remove_huge", "group": "crash", "note": "set.remove of a missing int of 5001 digits",
     "response": body("seen = set()", "seen.remove(10 ** 5000)", "return 1")},
    {"id": "list_of_huge_int", "group": "crash", "note": "returns a list holding an int of 5001 digits",
     "response": body("return [10 ** 5000]")},
    {"id": "int_too_large_for_float", "group": "crash", "note": "returns 2 ** 1100 (the correctness check overflows)",
     "response": body("return 2 ** 1100")},
    {"id": "system_exit", "group": "crash", "note": "typing.sys.exit()",
     "response": body("typing.sys.exit()", "return 1")},
    {"id": "os_exit", "group": "crash", "note": "random._os._exit(0)",
     "response": body("random._os._exit(0)", "return 1")},
    # --- no crash: the int-to-text limit inside the function is an ordinary ValueError
    {"id": "print_huge_int", "group": "no_crash", "note": "print of an int of 5001 digits (ValueError inside)",
     "response": body("print(10 ** 5000)", "return 1")},
    {"id": "str_huge_int", "group": "no_crash", "note": "str() of an int of 5001 digits",
     "response": body("return len(str(10 ** 5000))")},
    {"id": "big_int_ok", "group": "no_crash", "note": "an int of 4300 digits printed",
     "response": body("print(10 ** 4299)", "return 1")},
    # --- the interpreter as an answer sees it
    {"id": "stdout_fileno", "group": "interpreter", "note": "typing.sys.stdout.fileno()",
     "response": body("return typing.sys.stdout.fileno()")},
    {"id": "stdout_name", "group": "interpreter", "note": "typing.sys.stdout.name",
     "response": body("return int(typing.sys.stdout.name == '<stdout>')")},
    {"id": "stderr_fileno", "group": "interpreter", "note": "typing.sys.stderr.fileno()",
     "response": body("return typing.sys.stderr.fileno()")},
    {"id": "stderr_name", "group": "interpreter", "note": "typing.sys.stderr.name",
     "response": body("return int(typing.sys.stderr.name == '<stderr>')")},
    {"id": "stderr_write", "group": "interpreter", "note": "typing.sys.stderr.write",
     "response": body("return typing.sys.stderr.write('note\\n')")},
    {"id": "print_to_stderr", "group": "interpreter", "note": "print(..., file=typing.sys.stderr)",
     "response": body("print('checking', file=typing.sys.stderr)", "return 7")},
    {"id": "fd2_write", "group": "interpreter", "note": "random._os.write(2, ...)",
     "response": body("return random._os.write(2, b'abc')")},
    {"id": "fd1_write", "group": "interpreter", "note": "random._os.write(1, ...)",
     "response": body("return random._os.write(1, b'abcd')")},
    {"id": "stdout_via_random_os", "group": "interpreter", "note": "random._os.sys.stdout.fileno()",
     "response": body("return random._os.sys.stdout.fileno()")},
    {"id": "stdout_flush", "group": "interpreter", "note": "typing.sys.stdout.flush()",
     "response": body("typing.sys.stdout.flush()", "return 3")},
    {"id": "stdout_mode", "group": "interpreter", "note": "typing.sys.stdout.mode",
     "response": body("return int(typing.sys.stdout.mode == 'w')")},
    {"id": "stderr_errors", "group": "interpreter", "note": "typing.sys.stderr.errors",
     "response": body("return int(typing.sys.stderr.errors == 'backslashreplace')")},
] + [
    {"id": f"flag_{name}", "group": "flags", "note": f"typing.sys.flags.{name}",
     "response": body(f"return int(typing.sys.flags.{name})")}
    for name in ("debug", "inspect", "interactive", "optimize", "dont_write_bytecode", "no_user_site",
                 "no_site", "ignore_environment", "verbose", "bytes_warning", "quiet", "hash_randomization",
                 "isolated", "dev_mode", "utf8_mode", "warn_default_encoding", "safe_path", "int_max_str_digits")
]

# State carried from one answer (writer) to the next (reader) in the authors' single process: the
# reader's value alone and after the writer.
CHANNELS = [
    {"id": "math_tau", "writer": body("math.tau = 6", "return 1"), "reader": body("return math.tau")},
    {"id": "math_del_sqrt", "writer": body("del math.sqrt", "return 1"), "reader": body("return math.sqrt(16)")},
    {"id": "fraction_class_attribute", "writer": body("fractions.Fraction.half = 5", "return 1"),
     "reader": body("return fractions.Fraction.half")},
    {"id": "decimal_precision", "writer": body("decimal.getcontext().prec = 3", "return 1"),
     "reader": body("return float(decimal.Decimal(1) / decimal.Decimal(7))")},
    {"id": "decimal_rounding", "writer": body("decimal.getcontext().rounding = decimal.ROUND_UP", "return 1"),
     "reader": body("return float(decimal.Decimal('2.5').quantize(decimal.Decimal('1')))")},
    {"id": "decimal_flags", "writer": body("x = decimal.Decimal(1) / decimal.Decimal(3)", "return 1"),
     "reader": body("return len([f for f, v in decimal.getcontext().flags.items() if v])")},
    {"id": "decimal_traps", "writer": body("decimal.getcontext().traps[decimal.Inexact] = True", "return 1"),
     "reader": body("return float(decimal.Decimal(1) / decimal.Decimal(3))")},
    {"id": "random_draw", "writer": body("x = random.random()", "return 1"),
     "reader": body("return random.randint(1, 10 ** 9)")},
    {"id": "random_seed", "writer": body("random.seed(7)", "return 1"),
     "reader": body("return random.randint(1, 10 ** 9)")},
    {"id": "abc_register", "writer": body("numbers.Number.register(str)", "return 1"),
     "reader": body("return int(numbers.Number.__subclasscheck__(str))")},
    {"id": "typing_all", "writer": body("typing.__all__.append('Extra')", "return 1"),
     "reader": body("return len([n for n in typing.__all__ if n == 'Extra'])")},
    {"id": "recursion_limit_via_typing_sys", "writer": body("typing.sys.setrecursionlimit(123)", "return 1"),
     "reader": body("return typing.sys.getrecursionlimit()")},
    {"id": "int_max_str_digits", "writer": body("typing.sys.set_int_max_str_digits(640)", "return 1"),
     "reader": body("return len(str(10 ** 1000))")},
    {"id": "switch_interval", "writer": body("typing.sys.setswitchinterval(0.5)", "return 1"),
     "reader": body("return typing.sys.getswitchinterval()")},
    {"id": "environ", "writer": body("random._os.environ['EARNEST_CHANNEL'] = '1'", "return 1"),
     "reader": body("return len([k for k in random._os.environ if k == 'EARNEST_CHANNEL'])")},
    {"id": "working_directory", "writer": body("random._os.chdir('/')", "return 1"),
     "reader": body("return int(random._os.getcwd() == '/')")},
    {"id": "warnings_filters", "writer": body("typing.sys.modules['warnings'].simplefilter('error')", "return 1"),
     "reader": body("return len(typing.sys.modules['warnings'].filters)")},
]
