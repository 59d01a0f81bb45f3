"""site.names.break_long_names: long identifiers in inline code break after dots and underscores."""

from worklog_gen.site.names import break_long_names


def test_a_long_dotted_name_gets_a_break_point_after_each_dot_and_underscore():
    html = "<p>Use <code>torch.nn.functional.scaled_dot_product_attention</code> here.</p>"
    assert break_long_names(html) == ("<p>Use <code>torch.<wbr>nn.<wbr>functional.<wbr>scaled_<wbr>dot_<wbr>"
                                      "product_<wbr>attention</code> here.</p>")


def test_short_names_code_blocks_markup_and_other_text_are_left_alone():
    for html in ("<code>torch.matmul</code>",  # short
                 "<pre><code>torch.nn.functional.scaled_dot_product_attention</code></pre>",  # a block
                 '<pre class="x"><code>a_very_long_snake_case_name_here</code></pre>',
                 "<code>x = torch.nn.functional.scaled_dot_product_attention(q)</code>",  # not one name
                 "<code><span>torch.nn.functional.scaled_dot_product_attention</span></code>",
                 "<p>torch.nn.functional.scaled_dot_product_attention</p>"):
        assert break_long_names(html) == html


def test_trailing_and_doubled_separators_get_no_empty_break():
    assert break_long_names("<code>__a_long_private_name_for_this__</code>") == \
        "<code>__a_<wbr>long_<wbr>private_<wbr>name_<wbr>for_<wbr>this__</code>"
