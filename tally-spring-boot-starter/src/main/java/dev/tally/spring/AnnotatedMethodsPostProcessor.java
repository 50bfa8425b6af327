package dev.tally.spring;

import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.aopalliance.intercept.MethodInterceptor;
import org.springframework.aop.ClassFilter;
import org.springframework.aop.MethodMatcher;
import org.springframework.aop.Pointcut;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.StaticMethodMatcher;
import org.springframework.core.annotation.AnnotationUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Proxies every bean that has a method with one of the starter's annotations ({@link RateLimited},
 * {@link ConcurrencyLimited}), the way {@code @Async} and {@code @Validated} are applied, and
 * checks each annotation when the bean is created: a rule name that does not exist or a limit
 * that does not parse stops the application at startup, not at the first request.
 */
final class AnnotatedMethodsPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor {
  private static final long serialVersionUID = 1L;

  private final Class<? extends Annotation> annotation;
  private final transient Predicate<Method> annotated;
  private final transient Consumer<Method> check;

  /**
   * @param annotated whether a method carries the annotation
   * @param check reads and checks a method's annotation, throwing what is wrong
   */
  AnnotatedMethodsPostProcessor(Class<? extends Annotation> annotation, Predicate<Method> annotated,
      Consumer<Method> check, MethodInterceptor interceptor) {
    this.annotation = annotation;
    this.annotated = annotated;
    this.check = check;
    MethodMatcher matcher = new StaticMethodMatcher() {
      @Override
      public boolean matches(Method method, Class<?> targetClass) {
        return annotated.test(AopUtils.getMostSpecificMethod(method, targetClass));
      }
    };
    Pointcut pointcut = new Pointcut() {
      @Override
      public ClassFilter getClassFilter() {
        return ClassFilter.TRUE;
      }

      @Override
      public MethodMatcher getMethodMatcher() {
        return matcher;
      }
    };
    this.advisor = new DefaultPointcutAdvisor(pointcut, interceptor);
    setBeforeExistingAdvisors(true);
    setProxyTargetClass(true);
  }

  @Override
  public Object postProcessAfterInitialization(Object bean, String beanName) {
    Class<?> type = AopUtils.getTargetClass(bean);
    if (AnnotationUtils.isCandidateClass(type, annotation)) {
      ReflectionUtils.doWithMethods(type, m -> {
        if (annotated.test(m)) {
          check.accept(m);
        }
      }, ReflectionUtils.USER_DECLARED_METHODS);
    }
    return super.postProcessAfterInitialization(bean, beanName);
  }
}
