"""Answer extraction from text and code responses (section 3.3, Appendix F)."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from earnest.gsm.extraction import extract_code, extract_text, locate_solution, parse_number, trim_next_question
from earnest.sandbox import Limits, Sandbox

# Listing 7 (phi-2): runaway doubling, no "The final answer is"; cut short here.
LISTING_7 = (
    "The first paid hour is $13. The second paid hour is $13*2=$26. The third paid hour is "
    "$26*2=$52. The fourth paid hour is $52*2=$104. The fifth paid hour is $104*2=$208. "
    "The forty-fourth paid hour is $5230199167920994848*2=$1050699335879209996. The forty-fifth "
    "paid hour is $1050699335879209996*2=$2010399667920999824. The forty-sixth paid hour is "
    "$20103996679209998"
)

# Listing 8 (Meta-Llama-3-8B-Instruct), structured NL.
LISTING_8 = """Given:
Number of engineers originally: 29
Number of artists originally: 15
Number of engineers who stayed: 27

To find: number of artists left.

Solution:
First, calculate the total number of people originally:
29 + 15 = 44
Next, calculate the number of people who left:
1/4 * 44 = 11
Next, calculate the number of artists who left:
11 - 27 = 16
Finally, calculate the number of artists left:
15 - 16 = -1 (which is impossible, so there must be an error in the question)

The final answer is unknown due to the error in the question."""

# Listing 9 (Mistral-7B-Instruct-v0.1).
LISTING_9 = ("71 blocks + 47 stuffed animals + 30 multicolored rings = 158. Valeria has 238 toys in "
             "total. 158 - 238 = -80. This is not possible. The final answer is that there is an "
             "error in the problem statement.")


@pytest.fixture(scope="module")
def box():
    with Sandbox(workers=2, limits=Limits(cpu_seconds=1, wall_seconds=4.0)) as sandbox:
        yield sandbox


# ------------------------------------------------------------------------- text: the listings

def test_listing_7_runaway_arithmetic_falls_back_to_last_number():
    ex = extract_text(LISTING_7)
    assert ex.pattern == "last_number" and ex.error_class == ""
    assert ex.value == 20103996679209998.0
    assert ex.exact == 20103996679209998  # exact despite being beyond float precision


def test_listing_8_final_answer_unknown():
    ex = extract_text(LISTING_8)
    # no number after "The final answer is": the last number is "-1" (a sign after "= ")
    assert (ex.pattern, ex.value) == ("last_number", -1.0)


def test_listing_9_error_in_the_problem():
    ex = extract_text(LISTING_9)
    assert (ex.pattern, ex.value) == ("last_number", -80.0)


# ------------------------------------------------------------------------- text: edge cases

@pytest.mark.parametrize("response, value", [
    ("Let's think step by step. 3 + 15 = 18. The final answer is 18.", 18),
    ("The final answer is **18**.", 18),
    ("**The final answer is 18**", 18),
    ("The final answer is: 18", 18),
    ("The final answer is $18.", 18),
    ("The final answer is \\$1,234.50.", 1234.5),
    ("the final answer is 1,000,000 dollars", 1_000_000),
    ("The final answer is 25%.", 25),
    ("The final answer is 12 apples.", 12),
    ("The final answer is -7.", -7),
    ("The final answer is $-7.", -7),
    ("The final answer is \u22127", -7),
    ("The final answer is 0.5.", 0.5),
    ("The final answer is 3/4.", 0.75),
    ("The final answer is \\boxed{42}.", 42),
    ("The final answer is: $\\boxed{18}$ (after 2 steps)", 18),
    ("The final answer is 18\nThe final answer is 20", 18),  # the first stated answer counts
    ("Total 5 + 6 = 11. The final answer is unknown, I think 12.", 12),
])
def test_final_answer_forms(response, value):
    ex = extract_text(response)
    assert ex.value == pytest.approx(value)
    assert ex.error_class == ""


@pytest.mark.parametrize("response, value", [
    ("He has 5 apples and buys 3 more, so 8 apples", 8),
    ("15 - 16 is what remains", 16),  # leading number, the last one counts
    ("It cost 15-16", 16),            # a hyphen between numbers is not a sign
    ("The balance is -12 now", -12),
    ("So 2,500 + 1.5 = 2,501.5.", 2501.5),
    ("Answer: 1,234", 1234),
])
def test_last_number_fallback(response, value):
    ex = extract_text(response)
    assert ex.pattern == "last_number"
    assert ex.value == pytest.approx(value)


def test_text_cut_at_next_question():
    response = "So 3 + 4 = 7.\nThe final answer is 7.\n\nQ: Tom has 99 marbles.\nA: The final answer is 100."
    assert trim_next_question(response).strip().endswith("The final answer is 7.")
    assert extract_text(response).value == 7
    # without a final answer line, a number from the next question must not be picked up
    assert extract_text("So 3 + 4 = 7\nQ: Tom has 99 marbles").value == 7


def test_text_failure_classes():
    assert extract_text("").error_class == "empty_response"
    assert extract_text("   \n\t").error_class == "empty_after_trimming"
    assert extract_text("\nQ: Another question with 3 numbers 4").error_class == "empty_after_trimming"
    ex = extract_text("I am not sure how to solve this.")
    assert (ex.error_class, ex.pattern, ex.value) == ("no_number_found", "none", None)


def test_huge_numbers_do_not_crash():
    ex = extract_text("The final answer is " + "9" * 5000 + ".")
    assert ex.value == math.inf and ex.exact is None
    ex = extract_text("so " + "1" * 400)  # beyond float range, still exact
    assert ex.value == math.inf and ex.exact == int("1" * 400)
    ex = extract_text("0." + "3" * 5000)
    assert ex.value == pytest.approx(1 / 3) and ex.exact is None


def test_parse_number():
    assert parse_number("1,234.5") == (1234.5, Fraction(2469, 2))
    assert parse_number("-18") == (-18.0, Fraction(-18))
    assert parse_number(".5")[0] == 0.5
    with pytest.raises(ValueError):
        parse_number("12 apples")
    with pytest.raises(ValueError):
        parse_number("")


# ------------------------------------------------------------------------- code: locating

PROMPT_BODY = """    trees_now = 15
    trees_after_planting = 21

    # calculate the difference between trees after planting and trees originally
    trees_to_plant_today = trees_after_planting - trees_now
    return trees_to_plant_today


Q: If there are 3 cars in the parking lot and 2 more cars arrive, how many cars are in the parking lot?

A:
def solution():
    return 5
"""


def test_body_after_the_prompt_header(box):
    source, pattern, _ = locate_solution(PROMPT_BODY)
    assert pattern == "function_body"
    assert source.startswith("def solution():\n    trees_now = 15")
    assert "return 5" not in source  # the next question was cut
    ex = extract_code(PROMPT_BODY, box)
    assert (ex.value, ex.pattern, ex.error_class) == (6.0, "function_body", "")


def test_full_function_with_surroundings(box):
    response = ("import math\n\ndef solution():\n    side = math.sqrt(49)\n    return helper(side)\n\n"
                "def helper(x):\n    return x * 2\n\nprint(solution())\nThis function doubles the side.\n")
    source, pattern, _ = locate_solution(response)
    assert pattern == "function"
    assert "print(solution())" not in source and "This function" not in source
    ex = extract_code(response, box)
    assert ex.value == 14.0


def test_markdown_fenced_function(box):
    ex = extract_code("```python\ndef solution():\n    return 2 + 2\n```\nThe answer is 4.", box)
    assert (ex.value, ex.pattern) == (4.0, "function")


def test_structured_code_body_with_comments(box):
    body = ("    # given:\n    cars_before = 3  # number of cars\n    cars_arriving = 2\n\n"
            "    # to find: total number of cars\n\n    # solution:\n"
            "    cars_after = cars_before + cars_arriving\n    return cars_after\n")
    assert extract_code(body, box).value == 5.0


def test_unindented_body_is_accepted_when_it_is_code(box):
    ex = extract_code("x = 3\ny = 4\nreturn x * y\n", box)
    assert (ex.value, ex.pattern) == (12.0, "function_body")


@pytest.mark.parametrize("response", ["", "   \n", "I cannot write this function.", "Q: next question"])
def test_no_function(response, box):
    src, pattern, _ = locate_solution(response)
    assert src is None and pattern == "none"
    ex = extract_code(response, box)
    assert (ex.error_class, ex.pattern, ex.value) == ("no_function", "none", None)


def test_code_failure_classes(box):
    cases = {
        "    return total\n": "name_error",
        "    x = 3 +\n    return x\n": "syntax_error",
        "    x = 1\n": "none_returned",
        "    return 'seven'\n": "not_a_number",
        "    return 1 / 0\n": "zero_division_error",
        "    return int('x')\n": "type_value_error",
        "    return (3).foo\n": "attribute_error",
        "    return open('x').read()\n": "forbidden_construct",
        "    return {}['k']\n": "unclassified",
        "    while True:\n        pass\n": "timeout",
    }
    for response, cls in cases.items():
        ex = extract_code(response, box)
        assert ex.error_class == cls, (response, ex)
        assert ex.value is None


def test_listing_10_huge_literal_overflow(box):
    response = ("    apartments_before = 5\n    apartments_per_complex = 350\n"
                "    total = apartments_before * apartments_per_complex\n"
                "    total_75 = total * 0.75\n"
                "    total_sum = total_75 + 1" + "0" * 900 + "\n    return total_sum\n")
    ex = extract_code(response, box)
    # OverflowError (int too large to convert to float) is outside the predefined classes
    assert ex.error_class == "unclassified" and "OverflowError" in ex.detail


def test_default_sandbox_is_used_when_none_given():
    ex = extract_code("    return 2 ** 10\n")
    assert ex.value == 1024.0


def test_a_number_in_exponent_notation_is_one_number():
    """earnest mode reads "1e5" as 100000 (before: the last number was the exponent, 5); the
    reference reads it as the authors' regex does (no exponents: 1 after the phrase)."""
    cases = [("The final answer is 1e5", 100000.0, Fraction(100000)),
             ("The final answer is 2.5E-3.", 0.0025, Fraction(1, 400)),
             ("so the total is 3e2 apples", 300.0, Fraction(300)),
             ("The final answer is 1,000e3", 1e6, Fraction(10 ** 6))]
    for text, value, exact in cases:
        ex = extract_text(text)
        assert (ex.value, ex.exact) == (value, exact), text
    huge = extract_text("The final answer is 1e999999")
    assert huge.value == math.inf and huge.exact is None
    # no number's notation: "3e4f" is a hash, "3e" a number and a letter
    assert extract_text("its id is a3e4f").value == 4.0
    assert extract_text("x is 3e").value == 3.0
    assert extract_text("The answer is 1e5", fidelity="reference").value == 1.0
    assert extract_text("#### 2.5e3", fidelity="reference").value == 2.5
